// The agents' node reports, as the tunnel glue writes them: what the hub benchmarks seed into the
// store before the hub starts, so placement has a fleet to place on without agents.
import type { Store } from "../../../operators/lib/store/index.ts";

const API = "rlinf.io/v1alpha1";

/** Cluster `c<c>`, Online, with `nodes` Ready nodes `n<i>`; every other node has 64 GPUs. */
export async function seedCluster(store: Store, c: number, nodes: number): Promise<void> {
  await store.create({
    apiVersion: API,
    kind: "Cluster",
    metadata: { name: `c${c}`, labels: { "rlark.io/managed-by": "git" } },
    spec: { runtime: "kubernetes" },
    status: { phase: "Online" },
  });
  for (let n = 0; n < nodes; n++) {
    const gpu = n % 2 === 0;
    const resources = {
      cpu: "256",
      memory: "1024Gi",
      pods: "1000",
      ...(gpu ? { "nvidia.com/gpu": "64" } : {}),
    };
    await store.create({
      apiVersion: API,
      kind: "Node",
      metadata: { name: `n${n}`, namespace: `agent-c${c}`, labels: gpu ? { "nvidia.com/gpu": "true" } : {} },
      spec: { unschedulable: false },
      status: {
        phase: "Online",
        allocatable: resources,
        capacity: resources,
        requested: {},
        conditions: [{ type: "Ready", status: "True" }],
      },
    });
  }
}

/** `clusters` clusters of `nodes` nodes each, 8 clusters at a time (seeding is not what is measured). */
export async function seedClusters(store: Store, clusters: number, nodes: number): Promise<void> {
  for (let c = 0; c < clusters; c += 8) {
    await Promise.all(
      Array.from({ length: Math.min(8, clusters - c) }, (_, i) => seedCluster(store, c + i, nodes)),
    );
  }
}
