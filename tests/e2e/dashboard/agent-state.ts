// What agents and controllers would have written by now for the example repository, written
// straight into the store (the hub of browser.test.ts runs no controllers): GPU nodes (capacity,
// requests, disk), which cannot run here, the Tasks and Pods of Jobs on them, the Job and Workflow
// runs and Domain allocations. What real parts produce here is shown from real agents instead, by
// tests/e2e/dashboard/real-state.test.ts: capabilities from a capability directory (one stale),
// Pods' virtual IPs, DomainPeer members and their live traffic, an Addon a kubernetes agent
// installed Ready.
import type { KubeObject, Store } from "../../../operators/lib/store/index.ts";

const now = () => new Date().toISOString();

async function status(
  store: Store,
  kind: string,
  namespace: string | undefined,
  name: string,
  value: unknown,
) {
  const object = await store.get(kind, namespace, name);
  if (!object) throw new Error(`${kind} ${namespace ?? ""}/${name} is not in the store yet`);
  return store.updateStatus({ ...object, status: value });
}

async function create(store: Store, object: KubeObject) {
  const created = await store.create(object);
  return object.status ? store.updateStatus({ ...created, status: object.status }) : created;
}

export async function reportAgentState(store: Store): Promise<void> {
  const t = now();
  await status(store, "Cluster", undefined, "beijing", {
    phase: "Online",
    agentVersion: "0.1.0",
    lastHeartbeatTime: t,
  });
  await status(store, "Cluster", undefined, "shanghai-edge", { phase: "Offline", lastHeartbeatTime: t });
  const gpuNode = (requested: string) => ({
    phase: "Online",
    capacity: { cpu: "32", memory: "128Gi", "nvidia.com/gpu": "8" },
    allocatable: { cpu: "30", memory: "120Gi", "nvidia.com/gpu": "8" },
    requested: { cpu: "12", memory: "48Gi", "nvidia.com/gpu": requested },
    disk: { usedBytes: 950 * 2 ** 30, totalBytes: 1000 * 2 ** 30 },
    conditions: [{ type: "Ready", status: "True", lastTransitionTime: t }],
  });
  await status(store, "Node", "agent-beijing", "gpu-node-01", {
    ...gpuNode("6"),
    // what image pre-pull reports (real ones: tests/e2e/real-nodes/image-pre-pull.test.ts)
    images: [
      { image: "rlinf/rlinf:agentic-openvla", phase: "Present", attempts: 0, lastTransitionTime: t },
      {
        image: "registry.example.com/rlinf/robot:2",
        phase: "Failed",
        attempts: 3,
        message:
          'ErrImagePull: failed to pull and unpack image "registry.example.com/rlinf/robot:2": dial tcp: connection refused',
        lastTransitionTime: t,
      },
    ],
  });
  await status(store, "Node", "agent-beijing", "gpu-node-02", {
    ...gpuNode("0"),
    disk: { usedBytes: 200 * 2 ** 30, totalBytes: 1000 * 2 ** 30 },
  });
  await status(store, "Node", "agent-shanghai-edge", "edge-arm-01", {
    phase: "Online",
    allocatable: { cpu: "8", memory: "16Gi", "rlinf.io/device": "1" },
    requested: { cpu: "1", memory: "2Gi", "rlinf.io/device": "1" },
    disk: { usedBytes: 20 * 2 ** 30, totalBytes: 100 * 2 ** 30 },
    conditions: [{ type: "DiskPressure", status: "False" }],
  });
  await create(store, {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Node",
    metadata: {
      name: "master-01",
      namespace: "agent-beijing",
      labels: { "node-role.kubernetes.io/control-plane": "" },
    },
    spec: {},
    status: { phase: "Online", allocatable: { cpu: "4", memory: "8Gi" } },
  });
  await create(store, {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Task",
    metadata: {
      name: "ppo-cartpole-v1-actor-head",
      namespace: "agent-beijing",
      labels: { "rlinf.io/job": "ppo-cartpole-v1" },
    },
    spec: {
      job: "ppo-cartpole-v1",
      task: "actor-head",
      run: 1,
      head: true,
      role: "Actor",
      agentType: "Kubernetes",
    },
    status: {
      phase: "Running",
      observedNodes: ["gpu-node-01"],
      startTime: t,
    },
  });
  await create(store, {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Pod",
    metadata: {
      name: "ppo-cartpole-v1-actor-head-0",
      namespace: "agent-beijing",
      labels: { "rlinf.io/job": "ppo-cartpole-v1", "rlinf.io/task": "ppo-cartpole-v1-actor-head" },
    },
    spec: { task: "ppo-cartpole-v1-actor-head", job: "ppo-cartpole-v1", node: "gpu-node-01" },
    status: {
      phase: "Running",
      podIP: "172.16.3.7",
      restarts: 2,
      containerStatuses: [{ name: "trainer", restartCount: 2, state: "Running", exitCode: 137 }],
    },
  });
  await status(store, "Job", undefined, "ppo-cartpole-v1", {
    phase: "Running",
    run: 1,
    startTime: t,
    tasks: [
      { name: "actor-head", taskName: "ppo-cartpole-v1-actor-head", cluster: "beijing", phase: "Running" },
      { name: "rollout", taskName: "ppo-cartpole-v1-rollout", cluster: "beijing", phase: "Pending" },
    ],
    conditions: [
      { type: "Scheduled", status: "True", reason: "Placed", lastTransitionTime: t },
      { type: "Running", status: "True", reason: "HeadRunning", lastTransitionTime: t },
    ],
    history: [{ run: 0, phase: "Failed", tasks: [{ name: "actor-head", phase: "Failed", exitCode: 3 }] }],
  });
  await status(store, "Workflow", undefined, "collect-train-deploy", {
    phase: "Running",
    run: 1,
    nodes: [
      { name: "collect", job: "collect-train-deploy-collect", phase: "Succeeded" },
      { name: "train", job: "collect-train-deploy-train", phase: "Running" },
      { name: "deploy-to-robot", phase: "Pending" },
    ],
  });
  await status(store, "Domain", undefined, "ppo-experiment-1", {
    ipAllocations: [
      {
        ip: "10.0.1.2",
        job: "ppo-cartpole-v1",
        task: "actor-head",
        pod: "ppo-cartpole-v1-actor-head-0",
        cluster: "beijing",
      },
    ],
  });
}
