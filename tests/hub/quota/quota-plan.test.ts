// The PR plan says what a change does to quota: a new Job that its team's quota cannot hold
// next to the Jobs the hub has admitted "would wait", with the resource and what is free.

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t, { type Test } from "tap";
import { computePlan, renderPlanMarkdown, renderPlanText } from "../../../operators/feedback/plan/index.ts";
import type { KubeObject } from "../../../operators/lib/store/index.ts";
import { validatePaths } from "../../../operators/source/index.ts";

const gpuJob = (name: string, gpus: number) => ({
  apiVersion: "rlinf.io/v1alpha1",
  kind: "Job",
  metadata: { name },
  spec: {
    team: "robots",
    tasks: [
      {
        name: "learner",
        role: "Actor",
        agentType: "Kubernetes",
        kubernetes: {
          workload: {
            kind: "Deployment",
            replicas: gpus,
            template: {
              spec: {
                containers: [
                  { name: "main", image: "x", resources: { requests: { "nvidia.com/gpu": "1" } } },
                ],
              },
            },
          },
        },
      },
    ],
  },
});

const team = `apiVersion: rlinf.io/v1alpha1
kind: Team
metadata:
  name: robots
spec:
  quota:
    - resource: nvidia.com/gpu
      nominal: "4"
`;

// The hub's state: one Online cluster with room for 8 GPUs, and robots' running Job holding 2.
const live: KubeObject[] = [
  {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Cluster",
    metadata: { name: "c1" },
    spec: { runtime: "kubernetes" },
    status: { phase: "Online" },
  },
  {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Node",
    metadata: { name: "n1", namespace: "agent-c1" },
    spec: {},
    status: {
      phase: "Online",
      allocatable: { cpu: "64", memory: "256Gi", pods: "100", "nvidia.com/gpu": "8" },
    },
  },
  {
    ...gpuJob("running", 2),
    status: {
      phase: "Running",
      conditions: [{ type: "QuotaReserved", status: "True", reason: "QuotaReserved", message: "admitted" }],
    },
  },
];

async function plan(t: Test, jobs: object[]) {
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-quota-plan-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, "team.yaml"), team);
  await writeFile(path.join(dir, "jobs.yaml"), jobs.map((j) => JSON.stringify(j)).join("\n---\n"));
  const validation = await validatePaths(["."], { baseDir: dir });
  t.same(validation.errors, []);
  return computePlan({ validation, live, revision: "b".repeat(40), against: "a".repeat(40) });
}

t.test("a Job its team's quota cannot hold would wait, and the plan says for what", async (t) => {
  const result = await plan(t, [gpuJob("running", 2), gpuJob("big", 4), gpuJob("small", 2)]);
  t.same(
    result.placement.map((p) => [p.job, p.state, p.message]),
    [
      ["big", "waiting", "this Job would wait: team robots needs 4 nvidia.com/gpu, 2 free"],
      ["small", "placed", ""],
    ],
  );
  t.match(renderPlanText(result), "Job big: this Job would wait: team robots needs 4 nvidia.com/gpu, 2 free");
  const markdown = renderPlanMarkdown(result);
  t.match(markdown, "| big | | | ⏳ this Job would wait: team robots needs 4 nvidia.com/gpu, 2 free |");
  t.match(markdown, "1 Job would wait for quota");
});
