// The kubernetes runtime on a real control plane (hack/kube: kube-apiserver, controller-manager,
// scheduler, kwok's fake kubelets): Tasks become workloads and Running pods, observe() reports
// them with nodes and requests, prune waits for pods and claims, node overlays touch only their
// keys, and a new runtime adopts what an earlier one made.
import { randomBytes } from "node:crypto";
import {
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  type V1Pod,
  VersionApi,
} from "@kubernetes/client-node";
import t, { type Test } from "tap";
import { KubernetesRuntime } from "../../../operators/agent/runtimes/kubernetes/index.ts";
import type { RuntimeSnapshot } from "../../../operators/agent/runtimes/types.ts";
import { kubeTask, SSH_KEY } from "../../agent/runtimes/kubernetes/tasks.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";
import { nodeProxyRequests } from "./apiserver-metrics.ts";

const { kubeConfig: kc } = fleetCluster(0);
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const batch = kc.makeApiClient(BatchV1Api);
const objects = KubernetesObjectApi.makeApiClient(kc);

/** A runtime of the test's own: its instance label keeps parallel test runs from pruning each other. */
async function runtimeFor(t: Test, namespace: string, instance = `t${randomBytes(4).toString("hex")}`) {
  const runtime = await KubernetesRuntime.start({
    kubeConfig: kc,
    defaultNamespace: namespace,
    instance,
    agentVersion: "0.1.0-test",
    retryIntervalMs: 500,
  });
  t.teardown(() => runtime.stop());
  return { runtime, instance };
}

const container = (extra: Record<string, unknown> = {}) => ({
  name: "main",
  image: "registry.local/rlark/test:1",
  resources: { requests: { cpu: "250m", memory: "64Mi" } },
  ...extra,
});

const podsOf = (snapshot: RuntimeSnapshot, task: string) => snapshot.pods.filter((p) => p.task === task);
const taskSeen = (snapshot: RuntimeSnapshot, task: string): boolean =>
  snapshot.pods.some((p) => p.task === task) ||
  (snapshot.workloads ?? []).some((w) => w.task === task) ||
  (snapshot.volumes ?? []).some((v) => v.task === task);

t.test("a Deployment Task of 3 replicas on GPU nodes is reported as 3 Running pods with IPs", async (t) => {
  const namespace = await testNamespace(t, kc, "krt-deploy");
  const { runtime } = await runtimeFor(t, namespace);
  const task = kubeTask(
    "ppo",
    "actor",
    { kind: "Deployment", replicas: 3, template: { spec: { containers: [container()] } } },
    { nodeSelector: { "nvidia.com/gpu": "true" }, sshPublicKey: SSH_KEY },
  );
  await runtime.apply([task]);
  const pods = await waitFor(
    "3 Running pods in observe()",
    async () => {
      const running = podsOf(runtime.observe(), "ppo-actor").filter((p) => p.phase === "Running" && p.podIP);
      return running.length === 3 ? running : undefined;
    },
    onKube,
  );
  const snapshot = runtime.observe();
  const gpuNodes = new Set(
    snapshot.nodes.filter((n) => n.labels["nvidia.com/gpu"] === "true").map((n) => n.name),
  );
  t.ok(gpuNodes.size > 0, "the cluster reports GPU nodes");
  for (const pod of pods) {
    t.ok(gpuNodes.has(pod.node), `${pod.name} runs on a GPU node (${pod.node})`);
    t.equal(pod.job, "ppo");
    t.equal(pod.taskUid, "uid-ppo-actor");
    t.equal(pod.namespace, namespace);
    t.equal(pod.state, "Running");
  }
  t.same(pods.map((p) => p.index).sort(), [0, 1, 2], "replica indexes 0..2");
  t.equal(new Set(pods.map((p) => p.podIP)).size, 3, "distinct pod IPs");
  const workload = await waitFor(
    "the Deployment ready in observe()",
    async () => {
      const w = runtime.observe().workloads?.find((x) => x.task === "ppo-actor");
      return w?.readyReplicas === 3 ? w : undefined;
    },
    onKube,
  );
  t.match(workload, { kind: "Deployment", replicas: 3, generation: 1, taskUid: "uid-ppo-actor" });

  const ssh = await core.readNamespacedConfigMap({ name: "ppo-actor-ssh", namespace });
  t.match(ssh.data?.authorized_keys, SSH_KEY, "the ssh key is in the cluster");

  const node = snapshot.nodes.find((n) => n.name === pods[0]!.node)!;
  t.equal(node.nodeInfo.agentVersion, "0.1.0-test");
  t.equal(node.capacity["nvidia.com/gpu"], "8", "capacity as the node reports it");
  t.ok(
    node.addresses.some((a) => a.type === "InternalIP"),
    "addresses",
  );
  t.ok(
    node.conditions.some((c) => c.type === "Ready"),
    "conditions",
  );
  t.equal(node.controlPlane, false);

  // requested is the sum of the requests of the non-terminated pods on the node, whoever made them
  const check = await waitFor(
    "requested to match the pods on the node",
    async () => {
      const list = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node.name}` });
      let millis = 0;
      for (const p of list.items) {
        if (p.status?.phase === "Succeeded" || p.status?.phase === "Failed") continue;
        for (const c of p.spec?.containers ?? []) {
          const cpu = String(c.resources?.requests?.cpu ?? "0");
          millis += cpu.endsWith("m") ? Number(cpu.slice(0, -1)) : Number(cpu) * 1000;
        }
      }
      const reported = runtime.observe().nodes.find((n) => n.name === node.name)?.requested?.cpu ?? "0";
      const reportedMillis = reported.endsWith("m") ? Number(reported.slice(0, -1)) : Number(reported) * 1000;
      return reportedMillis === millis && millis > 0 ? { millis, reported } : undefined;
    },
    onKube,
  );
  const mine = pods.filter((p) => p.node === node.name).length;
  t.ok(check.millis >= mine * 250, `requested cpu ${check.reported} counts our ${mine} pod(s) of 250m`);
});

t.test("a restarted runtime adopts existing workloads without duplicates", async (t) => {
  const namespace = await testNamespace(t, kc, "krt-adopt");
  const instance = `t${randomBytes(4).toString("hex")}`;
  const first = await runtimeFor(t, namespace, instance);
  const task = kubeTask("adopt", "web", {
    kind: "Deployment",
    replicas: 2,
    template: { spec: { containers: [container()] } },
  });
  await first.runtime.apply([task]);
  const before = await waitFor(
    "2 Running pods",
    async () => {
      const running = podsOf(first.runtime.observe(), "adopt-web").filter((p) => p.phase === "Running");
      return running.length === 2 ? running.map((p) => p.name).sort() : undefined;
    },
    onKube,
  );
  await first.runtime.stop();
  t.equal((await apps.listNamespacedDeployment({ namespace })).items.length, 1, "stop() leaves the workload");

  const second = await runtimeFor(t, namespace, instance);
  t.same(
    podsOf(second.runtime.observe(), "adopt-web")
      .map((p) => p.name)
      .sort(),
    before,
    "the new runtime sees the running pods before any apply",
  );
  await second.runtime.apply([task]);
  const deployments = await apps.listNamespacedDeployment({ namespace });
  t.equal(deployments.items.length, 1, "one Deployment");
  t.same(
    deployments.items[0]?.metadata?.managedFields
      ?.filter((f) => f.operation === "Apply")
      .map((f) => f.manager),
    ["rlark-agent"],
    "applied by the one field manager",
  );
  const pods = await core.listNamespacedPod({ namespace });
  t.same(
    pods.items
      .filter((p) => !p.metadata?.deletionTimestamp)
      .map((p) => p.metadata?.name)
      .sort(),
    before,
    "the same pods keep running: no rollout, no duplicates",
  );
});

t.test("a StatefulSet Task gets its headless Service and ordinal pods; a Job Task completes", async (t) => {
  const namespace = await testNamespace(t, kc, "krt-sts");
  const { runtime } = await runtimeFor(t, namespace);
  const sts = kubeTask("ppo", "rollout", {
    kind: "StatefulSet",
    replicas: 2,
    template: { spec: { containers: [container()] } },
  });
  const job = kubeTask("ppo", "eval", {
    kind: "Job",
    replicas: 1,
    template: { spec: { containers: [container()] } },
  });
  await runtime.apply([sts, job]);
  const stsPods = await waitFor(
    "2 Running StatefulSet pods",
    async () => {
      const running = podsOf(runtime.observe(), "ppo-rollout").filter((p) => p.phase === "Running");
      return running.length === 2 ? running : undefined;
    },
    onKube,
  );
  t.same(
    stsPods.map((p) => [p.name, p.index]).sort(),
    [
      ["ppo-rollout-0", 0],
      ["ppo-rollout-1", 1],
    ],
    "pods carry their ordinals",
  );
  const service = await core.readNamespacedService({ name: "ppo-rollout", namespace });
  t.equal(service.spec?.clusterIP, "None", "the headless Service exists");

  const finished = await waitFor(
    "the Job to complete in observe()",
    async () => {
      const w = runtime.observe().workloads?.find((x) => x.task === "ppo-eval");
      return w?.finished ? w : undefined;
    },
    onKube,
  );
  t.match(finished, { kind: "Job", finished: "Complete", succeeded: 1, failed: 0, exitCode: 0 });
  const jobPod = podsOf(runtime.observe(), "ppo-eval")[0];
  t.match(jobPod, { phase: "Succeeded", state: "Terminated", exitCode: 0, reason: "Completed" });
  const made = await batch.readNamespacedJob({ name: "ppo-eval", namespace });
  t.equal(made.spec?.backoffLimit, 0);
});

t.test("Ray head and worker Tasks render the scripts ConfigMap and the head Service", async (t) => {
  const namespace = await testNamespace(t, kc, "krt-ray");
  const { runtime } = await runtimeFor(t, namespace);
  const head = kubeTask(
    "rl",
    "head",
    {
      kind: "Deployment",
      template: { spec: { containers: [container({ command: ["python", "train.py"] })] } },
    },
    { annotations: { "rlinf.io/ray-role": "head", "rlinf.io/ray-total-nodes": "3" } },
  );
  const worker = kubeTask(
    "rl",
    "worker",
    { kind: "StatefulSet", replicas: 2, template: { spec: { containers: [container()] } } },
    { annotations: { "rlinf.io/ray-role": "worker", "rlinf.io/ray-head-task-name": "head" } },
  );
  await runtime.apply([head, worker]);
  const service = await core.readNamespacedService({ name: "rl-head-ray-head", namespace });
  t.same(
    service.spec?.ports?.map((p) => p.port),
    [6379, 8265, 8080],
  );
  const scripts = await core.readNamespacedConfigMap({ name: "rl-worker-ray", namespace });
  t.same(Object.keys(scripts.data ?? {}).sort(), ["ray_check.py", "ray_head.sh", "ray_worker.sh"]);
  const endpoints = await waitFor(
    "the head Service to select the head pod",
    async () => {
      const slices = await kc
        .makeApiClient(CoreV1Api)
        .listNamespacedPod({ namespace, labelSelector: "rlark.io/task=rl-head" });
      return slices.items.length === 1 ? slices.items[0] : undefined;
    },
    onKube,
  );
  const main = (endpoints as V1Pod).spec?.containers[0];
  t.same(main?.command, ["bash", "/etc/rlark/ray/ray_head.sh"]);
  t.same(main?.args, ["python", "train.py"]);
  t.ok(
    main?.env?.some(
      (e) => e.name === "RLARK_HEAD_ADDRESS" && e.value === `rl-head-ray-head.${namespace}.svc:6379`,
    ),
    "the head address names the head Service",
  );
});

t.test(
  "prune deletes a removed Task's workload and claims; observe() keeps it until its pods are gone",
  async (t) => {
    const namespace = await testNamespace(t, kc, "krt-prune");
    const { runtime } = await runtimeFor(t, namespace);
    const task = kubeTask("ppo", "data", {
      kind: "Deployment",
      replicas: 2,
      template: {
        spec: {
          containers: [container({ volumeMounts: [{ name: "scratch", mountPath: "/scratch" }] })],
          volumes: [
            {
              name: "scratch",
              ephemeral: {
                volumeClaimTemplate: {
                  spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
                },
              },
            },
          ],
        },
      },
    });
    const keep = kubeTask("ppo", "keep", {
      kind: "Deployment",
      template: { spec: { containers: [container()] } },
    });
    await runtime.apply([task, keep]);
    await waitFor(
      "2 pods and 2 claims for the Task",
      async () => {
        const s = runtime.observe();
        return podsOf(s, "ppo-data").length === 2 &&
          (s.volumes ?? []).filter((v) => v.task === "ppo-data").length === 2
          ? true
          : undefined;
      },
      onKube,
    );

    // from here on, every snapshot that no longer names the Task must find the cluster empty of it
    const violations: string[] = [];
    let gone = false;
    const checkGone = async () => {
      if (gone || taskSeen(runtime.observe(), "ppo-data")) return;
      gone = true;
      const pods = await core.listNamespacedPod({ namespace, labelSelector: "rlark.io/task=ppo-data" });
      const pvcs = await core.listNamespacedPersistentVolumeClaim({
        namespace,
        labelSelector: "rlark.io/task=ppo-data",
      });
      if (pods.items.length > 0) violations.push(`${pods.items.length} pods left`);
      if (pvcs.items.length > 0) violations.push(`${pvcs.items.length} claims left`);
    };
    const checks: Promise<void>[] = [];
    const unsubscribe = runtime.onChange(() => checks.push(checkGone()));
    t.teardown(unsubscribe);

    await runtime.apply([keep]);
    // On a busy machine the fake pods and claims may all be gone before apply() returns, so the
    // Task need not be seen here; if it is already dropped, the cluster must be empty of it.
    checks.push(checkGone());
    await waitFor(
      "observe() to drop the Task",
      async () => (taskSeen(runtime.observe(), "ppo-data") ? undefined : true),
      onKube,
    );
    await checkGone();
    await Promise.all(checks);
    t.same(violations, [], "the Task left observe() only once its pods and claims were gone");
    const deployments = await apps.listNamespacedDeployment({ namespace });
    t.same(
      deployments.items.map((d) => d.metadata?.name),
      ["ppo-keep"],
      "only the desired workload is left",
    );
  },
);

t.test("node overlays cordon and label a node, and removing them reverts only their keys", async (t) => {
  const { runtime } = await runtimeFor(t, "default");
  const name = `overlay-${randomBytes(3).toString("hex")}`;
  await core.createNode({
    body: {
      metadata: {
        name,
        labels: { "kubernetes.io/hostname": name, admin: "keep", team: "vision" },
        // not a kwok node, and tainted: other tests that count or fill the kwok nodes never see it
        annotations: { "admin-note": "hands off" },
      },
      spec: { taints: [{ key: "rlark.io/test-node", effect: "NoSchedule" }] },
    },
  });
  t.teardown(() => core.deleteNode({ name }).catch(() => undefined));
  await waitFor(
    "the runtime to see the node",
    async () => (runtime.observe().nodes.some((n) => n.name === name) ? true : undefined),
    onKube,
  );
  const read = () => core.readNode({ name });

  await runtime.cluster.applyNodeOverlays([
    {
      name,
      labels: { "rlark.io/node-category-robot": "true", team: "robotics" },
      annotations: { "rlark.io/city": "beijing" },
      unschedulable: true,
    },
  ]);
  let node = await read();
  t.equal(node.spec?.unschedulable, true, "cordoned");
  t.match(node.metadata?.labels, { "rlark.io/node-category-robot": "true", team: "robotics", admin: "keep" });
  t.match(node.metadata?.annotations, { "rlark.io/city": "beijing", "admin-note": "hands off" });
  t.equal(node.spec?.taints?.[0]?.key, "rlark.io/test-node", "other fields are left alone");

  // the next overlay drops the robot label: only that goes
  await runtime.cluster.applyNodeOverlays([
    { name, labels: { team: "robotics" }, annotations: { "rlark.io/city": "beijing" }, unschedulable: true },
  ]);
  node = await read();
  t.notOk(
    "rlark.io/node-category-robot" in (node.metadata?.labels ?? {}),
    "a dropped overlay label is removed",
  );
  t.equal(node.metadata?.labels?.team, "robotics");
  t.equal(node.spec?.unschedulable, true);

  // an admin's kubectl edit of an overlay key is undone on the next node event
  await objects.patch(
    { apiVersion: "v1", kind: "Node", metadata: { name, labels: { team: "other" } } },
    undefined,
    undefined,
    "kubectl-edit",
    undefined,
    PatchStrategy.MergePatch,
  );
  await waitFor(
    "the overlay's value to come back",
    async () => ((await read()).metadata?.labels?.team === "robotics" ? true : undefined),
    onKube,
  );

  await runtime.cluster.applyNodeOverlays([]);
  node = await read();
  t.notOk(node.spec?.unschedulable, "uncordoned once no overlay cordons it");
  t.notOk("team" in (node.metadata?.labels ?? {}), "the overlay's label is removed");
  t.notOk("rlark.io/city" in (node.metadata?.annotations ?? {}), "the overlay's annotation is removed");
  t.notOk("rlark.io/overlay-keys" in (node.metadata?.annotations ?? {}), "no record is left behind");
  t.equal(node.metadata?.labels?.admin, "keep", "the admin's own label stays");
  t.equal(node.metadata?.annotations?.["admin-note"], "hands off", "the admin's own annotation stays");
});

t.test(
  "a Job Task recreated under the same name runs afresh; stop with terminatePods removes it all",
  async (t) => {
    const namespace = await testNamespace(t, kc, "krt-rerun");
    const { runtime } = await runtimeFor(t, namespace);
    const first = kubeTask("nightly", "eval", {
      kind: "Job",
      replicas: 1,
      template: { spec: { containers: [container()] } },
    });
    await runtime.apply([first]);
    const done = await waitFor(
      "the first run to complete",
      async () => {
        const w = runtime.observe().workloads?.find((x) => x.task === "nightly-eval");
        return w?.finished === "Complete" ? w : undefined;
      },
      onKube,
    );
    t.equal(done.taskUid, "uid-nightly-eval");

    const second = { ...first, metadata: { ...first.metadata, uid: "uid-nightly-eval-run-2" } };
    await runtime.apply([second]);
    const rerun = await waitFor(
      "a Job of the new Task uid",
      async () => {
        const job = await batch.readNamespacedJob({ name: "nightly-eval", namespace }).catch(() => undefined);
        return job?.metadata?.annotations?.["rlark.io/task-uid"] === "uid-nightly-eval-run-2"
          ? job
          : undefined;
      },
      onKube,
    );
    t.notOk(rerun.metadata?.deletionTimestamp, "the old Job was replaced, not patched");
    await waitFor(
      "the new run's pod, and only it, in observe()",
      async () => {
        const pods = podsOf(runtime.observe(), "nightly-eval");
        return pods.length === 1 && pods[0]?.taskUid === "uid-nightly-eval-run-2" ? true : undefined;
      },
      onKube,
    );

    await runtime.stop({ terminatePods: true });
    await waitFor(
      "no Job and no pod left",
      async () => {
        const jobs = await batch.listNamespacedJob({ namespace });
        const pods = await core.listNamespacedPod({ namespace });
        return jobs.items.length === 0 && pods.items.length === 0 ? true : undefined;
      },
      onKube,
    );
    t.pass("stop({ terminatePods: true }) deleted the workload and its pods");
  },
);

t.test("a Task the API server refuses is reported in rejected while the others run", async (t) => {
  const namespace = await testNamespace(t, kc, "krt-invalid");
  const { runtime } = await runtimeFor(t, namespace);
  // container names must be DNS labels: only the API server's validation catches this one
  const bad = kubeTask("bad", "web", {
    kind: "Deployment",
    template: { spec: { containers: [container({ name: "Main_Container" })] } },
  });
  const good = kubeTask("good", "web", {
    kind: "Deployment",
    template: { spec: { containers: [container()] } },
  });
  await runtime.apply([bad, good]);
  t.same(
    runtime.rejected.map((r) => r.task),
    ["bad-web"],
    "the refused Task is listed",
  );
  t.match(runtime.rejected[0]?.message, /Deployment bad-web: .*Main_Container/, "with the server's reason");
  await waitFor(
    "the good Task's pod Running",
    async () => (podsOf(runtime.observe(), "good-web").some((p) => p.phase === "Running") ? true : undefined),
    onKube,
  );
});

t.test(
  "observe() reports the API server's version, every container by name, and no disk figures from kwok nodes, said once",
  async (t) => {
    const namespace = await testNamespace(t, kc, "krt-figures");
    const logged: { message: string; node?: unknown }[] = [];
    const log = (message: string, fields?: Record<string, unknown>) =>
      logged.push({ message, node: fields?.node });
    const runtime = await KubernetesRuntime.start({
      kubeConfig: kc,
      defaultNamespace: namespace,
      instance: `t${randomBytes(4).toString("hex")}`,
      diskStatsIntervalMs: 100,
      logger: { info: log, warn: log, error: log },
    });
    t.teardown(() => runtime.stop());
    const { gitVersion } = await kc.makeApiClient(VersionApi).getCode();
    t.equal(runtime.observe().kubernetesVersion, gitVersion, "the API server's gitVersion");
    const nodeNames = (await core.listNode()).items.map((n) => n.metadata?.name ?? "").sort();
    t.same(
      runtime
        .observe()
        .nodes.map((n) => n.name)
        .sort(),
      nodeNames,
      "every node of the cluster",
    );

    await runtime.apply([
      kubeTask("figures", "train", {
        kind: "Deployment",
        replicas: 1,
        template: {
          spec: {
            containers: [
              container({ name: "trainer" }),
              container({ name: "shipper", image: "registry.local/s:2" }),
            ],
          },
        },
      }),
    ]);
    const pod = await waitFor(
      "the pod Running with both containers",
      async () => {
        const p = podsOf(runtime.observe(), "figures-train").find((x) => x.phase === "Running");
        return p?.containers?.every((c) => c.state === "Running") ? p : undefined;
      },
      onKube,
    );
    t.same(
      pod.containers?.map((c) => [c.name, c.image, c.state]),
      [
        ["trainer", "registry.local/rlark/test:1", "Running"],
        ["shipper", "registry.local/s:2", "Running"],
      ],
      "the pod's own container names, images and states",
    );

    // kwok nodes have no kubelet: every node fails, is said once, and has no figures
    const said = () => logged.filter((l) => /no disk figures/.test(l.message));
    await waitFor(
      "each node's missing disk figures said",
      async () => (new Set(said().map((l) => l.node)).size === nodeNames.length ? true : undefined),
      onKube,
    );
    const before = await nodeProxyRequests(kc);
    await waitFor(
      "three more rounds of stats reads",
      async () => ((await nodeProxyRequests(kc)) >= before + 3 * nodeNames.length ? true : undefined),
      onKube,
    );
    t.equal(said().length, nodeNames.length, "said once per node, not every round");
    t.same(
      runtime.observe().nodes.filter((n) => n.disk),
      [],
      "no node has disk figures",
    );

    // a runtime without an instance (a real agent) does not count a test runtime's objects as its own
    const plain = await KubernetesRuntime.start({ kubeConfig: kc, defaultNamespace: namespace });
    t.teardown(() => plain.stop());
    t.same(podsOf(plain.observe(), "figures-train"), [], "not its pods");
    t.notOk(
      plain.observe().workloads?.some((w) => w.task === "figures-train"),
      "not its workloads",
    );
  },
);
