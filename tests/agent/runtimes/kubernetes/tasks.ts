// Task fixtures shared by the kubernetes runtime's rendering tests.
import type { RuntimeTask } from "../../../../operators/agent/runtimes/types.ts";

export const SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEXAMPLEexampleEXAMPLEexampleEXAMPLE alice@lab";

export function kubeTask(
  job: string,
  task: string,
  workload: Record<string, unknown>,
  extra: Partial<RuntimeTask["spec"]> = {},
): RuntimeTask {
  return {
    metadata: {
      name: `${job}-${task}`,
      namespace: "agent-beijing",
      uid: `uid-${job}-${task}`,
      generation: 1,
      labels: { "rlinf.io/job": job },
    },
    spec: {
      job,
      task,
      role: "Actor",
      agentType: "Kubernetes",
      kubernetes: { workload },
      ...extra,
    },
  };
}

export const trainer = (extra: Record<string, unknown> = {}) => ({
  name: "trainer",
  image: "pytorch/pytorch:2.3.0",
  ...extra,
});
