// Golden tests of the plan: a fixed revision against a fixed live state gives byte-for-byte the
// same Markdown, text and JSON (tests/helpers/plan-golden.ts).
import { join } from "node:path";
import t from "tap";
import {
  type DryRunOutcome,
  type Plan,
  planFailed,
  planTree,
  type WorkloadDryRunner,
} from "../../../operators/feedback/plan/index.ts";
import type { KubeObject } from "../../../operators/lib/store/index.ts";
import { matchPlanGoldens } from "../../helpers/plan-golden.ts";

const fixtures = join(import.meta.dirname, "../../fixtures/plan");
const repo = join(fixtures, "repo");
const git = { "rlark.io/managed-by": "git" };
const REVISION = "0123456789abcdef0123456789abcdef01234567";

/** The hub's state before the revision: what the store would hold after applying the last one. */
const live: KubeObject[] = [
  {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Cluster",
    metadata: { name: "beijing", labels: { ...git, region: "cn-north" } },
    spec: { runtime: "kubernetes" },
    status: { phase: "Online" },
  },
  {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Cluster",
    metadata: { name: "shanghai", labels: { ...git, region: "cn-east" } },
    spec: { runtime: "kubernetes" },
    status: { phase: "Offline" },
  },
  {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Node",
    metadata: { name: "gpu-01", namespace: "agent-beijing", labels: {} },
    status: {
      phase: "Online",
      allocatable: { cpu: "32", "nvidia.com/gpu": "8", pods: "110" },
      requested: { cpu: "2", "nvidia.com/gpu": "1" },
      conditions: [{ type: "Ready", status: "True" }],
    },
  },
  {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Domain",
    metadata: { name: "lab", labels: git },
    spec: { cidr: "10.0.1.0/29" },
    status: {
      ipAllocations: [
        { ip: "10.0.1.1", job: "steady", task: "trainer", pod: "steady-trainer-0", cluster: "beijing" },
        { ip: "10.0.1.2", job: "gone", task: "trainer", pod: "gone-trainer-0", cluster: "beijing" },
      ],
    },
  },
  {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Job",
    metadata: { name: "steady", labels: git, annotations: { "rlark.io/source-file": "jobs/steady.yaml:1" } },
    spec: {
      domain: "lab",
      tasks: [
        {
          name: "trainer",
          head: true,
          role: "Actor",
          agentType: "Kubernetes",
          kubernetes: {
            workload: {
              kind: "Deployment",
              replicas: 1,
              template: {
                spec: {
                  containers: [
                    {
                      name: "trainer",
                      image: "pytorch/pytorch:2.3.0",
                      resources: {
                        requests: { cpu: "2", "nvidia.com/gpu": "1" },
                        limits: { "nvidia.com/gpu": "1" },
                      },
                    },
                  ],
                },
              },
            },
          },
        },
      ],
    },
  },
  {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Job",
    metadata: { name: "train", labels: git },
    spec: { domain: "lab", tasks: [] },
  },
  {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Addon",
    metadata: { name: "device-plugin", namespace: "agent-beijing", labels: git },
    spec: { addonName: "embodied-runtime", version: "0.0.9", values: { image: "old" } },
  },
  {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "User",
    metadata: { name: "mallory", labels: git },
    spec: { roles: ["viewer"] },
  },
  {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "User",
    metadata: { name: "agent-made" },
    spec: { roles: ["viewer"] },
  },
];

const runner: WorkloadDryRunner = {
  async dryRun(cluster, workload): Promise<DryRunOutcome> {
    if (workload.metadata.name === "train-trainer") {
      return { state: "failed", message: 'Deployment.apps "train-trainer" is invalid: spec.replicas: quota' };
    }
    return cluster === "beijing" ? { state: "passed" } : { state: "offline" };
  },
};

async function plan(): Promise<Plan> {
  return planTree({
    dir: repo,
    revision: REVISION,
    live,
    against: "the live state of hub prod",
    dryRunner: runner,
  });
}

t.test("the plan of a revision is the same Markdown, text and JSON every time", (t) =>
  matchPlanGoldens(t, plan, "plan", {
    fileUrl: (f, l) => `https://github.test/acme/fleet/blob/${REVISION}/${f}#L${l}`,
  }),
);

t.test("the plan's content: changes, placement, pools, addons and dry-runs", async (t) => {
  const p = await plan();
  t.same(p.counts, { create: 2, change: 2, delete: 1, unchanged: 4 });
  const actions = Object.fromEntries(p.changes.map((c) => [`${c.kind}/${c.namespace}/${c.name}`, c.action]));
  t.same(actions, {
    "Job//huge": "create",
    "Job//train": "change",
    "Addon/agent-beijing/device-plugin": "change",
    "Addon/agent-shanghai/device-plugin": "create",
    "User//mallory": "delete",
  });
  t.notOk("User//agent-made" in actions, "objects git did not write are never deleted");
  t.equal(actions["Job//steady"], undefined, "an unchanged Job is not listed");
  const huge = p.placement.find((x) => x.job === "huge");
  t.equal(huge?.state, "unschedulable");
  t.match(huge?.message, /nvidia\.com\/gpu/);
  const train = p.placement.find((x) => x.job === "train");
  t.same(train?.tasks, [{ task: "trainer", cluster: "beijing", nodes: ["gpu-01×2"] }]);
  t.same(p.domains, [
    { domain: "lab", cidr: "10.0.1.0/29", usable: 6, allocated: 2, requested: 3, free: 1, outOfRange: 0 },
  ]);
  // The shipped embodied-runtime entry, rendered with its defaults: the exact objects each cluster gets.
  const rendered = [
    "ServiceAccount rlark-system/rlark-device-plugin",
    "ServiceAccount rlark-system/rlark-device-controllers",
    "ClusterRole rlark-device-plugin",
    "ClusterRoleBinding rlark-device-plugin",
    "ServiceAccount rlark-system/rlark-device-webhook",
    "ClusterRole rlark-device-webhook",
    "ClusterRoleBinding rlark-device-webhook",
    "ConfigMap rlark-system/rlark-robots",
    "ConfigMap rlark-system/rlark-device-controllers",
    "DaemonSet rlark-system/rlark-device-plugin",
    "DaemonSet rlark-system/rlark-device-controllers",
    "Deployment rlark-system/rlark-device-webhook",
    "Service rlark-system/rlark-device-webhook",
    "MutatingWebhookConfiguration rlark-device-webhook",
  ];
  t.same(
    p.addons.map(({ manifest, ...rest }) => rest),
    [
      {
        addon: "embodied-runtime",
        cluster: "beijing",
        action: "upgrade",
        from: "0.0.9",
        to: "0.1.0",
        objects: rendered,
      },
      {
        addon: "embodied-runtime",
        cluster: "shanghai",
        action: "install",
        from: "",
        to: "0.1.0",
        objects: rendered,
      },
    ],
  );
  for (const addon of p.addons) {
    t.match(
      addon.manifest,
      /kind: MutatingWebhookConfiguration/,
      `${addon.cluster}: the manifest is the rendered YAML`,
    );
  }
  t.same(
    p.dryRun.map((d) => [d.cluster, d.object, d.state]),
    [["beijing", "Deployment/default/train-trainer", "failed"]],
  );
  t.ok(planFailed(p), "a refused dry-run fails the plan");
});
