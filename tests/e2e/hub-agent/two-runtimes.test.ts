// One Job, two clusters: a GPU task on a real Kubernetes control plane (hack/kube, kwok nodes)
// through a kubernetes-runtime agent, and an environment process on a process-runtime agent. The
// hub places each task, the agents run them, status flows back; a stop leaves nothing behind.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { AppsV1Api } from "@kubernetes/client-node";
import t from "tap";
import { ProcessRuntime } from "../../../operators/agent/runtimes/process/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { jobYaml, trainerTaskYaml } from "../../helpers/job-yaml.ts";
import { startKubernetesAgentOnHub } from "../../helpers/kubernetes-agent-on-hub.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const apps = kc.makeApiClient(AppsV1Api);

function repository(namespace: string, stopped: boolean): Record<string, string> {
  return {
    "clusters.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: gpu
  labels: { role: training }
spec:
  runtime: kubernetes
---
apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: bench
  labels: { role: environment }
spec:
  runtime: process
`,
    // The Domain lets the Job's tasks span the two clusters (without one a Job runs in one cluster).
    "domain.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Domain
metadata:
  name: lab
spec:
  cidr: 10.0.9.0/24
`,
    "job.yaml": jobYaml(
      "mixed",
      [
        trainerTaskYaml({
          namespace,
          replicas: 2,
          resources: `{ requests: { cpu: "1", nvidia.com/gpu: "1" }, limits: { nvidia.com/gpu: "1" } }`,
          nodeSelector: `{ nvidia.com/gpu: "true" }`,
        }),
        `    - name: env
      role: Env
      agentType: Raw
      clusterSelector: { matchLabels: { role: environment } }
      raw:
        kind: Deployment
        command: ["sh", "-c", "sleep 300; true"]
`,
      ],
      { domain: "lab", stopped },
    ),
  };
}

t.test(
  "a Job with a Kubernetes task and a Raw task runs across two clusters and stops cleanly",
  async (t) => {
    const namespace = await testNamespace(t, kc, "two-runtimes");
    const { git, hub } = await startHubOnGit(t, { files: repository(namespace, false) });
    await waitFor(
      "clusters from git",
      async () => (await hub.store.get("Cluster", undefined, "bench")) ?? undefined,
      onKube,
    );

    await startKubernetesAgentOnHub(t, hub, "gpu", {
      kubeConfig: kc,
      namespace,
      reportIntervalMs: 1_000,
    });
    const processRuntime = await ProcessRuntime.open({
      stateDir: path.join(await mkdtemp(path.join(tmpdir(), "rlark-two-bench-")), "runtime"),
      logger: silentLogger,
    });
    // Registered before the agent's: teardowns run last-in, first-out, so the agent stops first.
    t.teardown(() => processRuntime.stop({ terminatePods: true }));
    await startAgentOnHub(t, hub, "bench", {
      runtime: processRuntime,
      runtimeKind: "process",
      reportIntervalMs: 1_000,
    });

    const phase = async () =>
      ((await hub.store.get("Job", undefined, "mixed"))?.status as { phase?: string })?.phase;
    await waitFor("the Job Running", async () => ((await phase()) === "Running" ? true : undefined), {
      attempts: 480,
      everyMs: 250,
    });
    t.ok(
      await hub.store.get("Task", "agent-gpu", "mixed-trainer"),
      "the GPU task went to the kubernetes cluster",
    );
    t.ok(
      await hub.store.get("Task", "agent-bench", "mixed-env"),
      "the environment went to the process cluster",
    );
    const deployment = await apps.readNamespacedDeployment({ name: "mixed-trainer", namespace });
    t.equal(deployment.metadata?.labels?.["rlinf.io/job"], "mixed");
    t.same(deployment.spec?.template.spec?.nodeSelector, { "nvidia.com/gpu": "true" });
    const pods = await hub.store.list("Pod", { namespace: "agent-gpu" });
    t.equal(pods.items.filter((p) => (p.spec as { task?: string }).task === "mixed-trainer").length, 2);
    const nodes = await hub.store.list("Node", { namespace: "agent-gpu" });
    t.ok(nodes.items.length > 0, "the kubernetes agent reports its nodes");

    await git.commit(repository(namespace, true));
    await waitFor("the Job Stopped", async () => ((await phase()) === "Stopped" ? true : undefined), {
      attempts: 480,
      everyMs: 250,
    });
    const left = await apps.listNamespacedDeployment({ namespace });
    t.same(
      left.items.map((d) => d.metadata?.name),
      [],
      "no workload is left in the cluster",
    );
    t.same(processRuntime.observe().pods, [], "no process is left on the machine");
  },
);
