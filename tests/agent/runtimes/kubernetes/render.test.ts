// Task → manifests, checked against golden files (RLARK_UPDATE_GOLDEN=1 rewrites them) and for
// the behaviours the runtime and the pods rely on.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type {
  KubernetesObject,
  V1ConfigMap,
  V1Deployment,
  V1Job,
  V1PodSpec,
  V1Service,
  V1StatefulSet,
} from "@kubernetes/client-node";
import t, { type Test } from "tap";
import YAML from "yaml";
import { dnsLabel } from "../../../../operators/agent/runtimes/kubernetes/workloads/names.ts";
import {
  RenderError,
  type RenderOptions,
  renderTask,
} from "../../../../operators/agent/runtimes/kubernetes/workloads/render.ts";
import type { RuntimeTask } from "../../../../operators/agent/runtimes/types.ts";
import packageJson from "../../../../package.json" with { type: "json" };
import { kubeTask, SSH_KEY, trainer } from "./tasks.ts";

const goldenDir = join(import.meta.dirname, "../../../fixtures/kubernetes-runtime/golden");

function golden(t: Test, name: string, task: RuntimeTask, options: RenderOptions = {}): KubernetesObject[] {
  const rendered = renderTask(task, options);
  const text = rendered.objects.map((o) => `---\n${YAML.stringify(o, { lineWidth: 0 })}`).join("");
  const file = join(goldenDir, `${name}.yaml`);
  if (process.env.RLARK_UPDATE_GOLDEN === "1" || !existsSync(file)) writeFileSync(file, text);
  t.equal(text, readFileSync(file, "utf8"), `${name} matches golden/${name}.yaml`);
  t.equal(
    JSON.stringify(renderTask(task, options).objects),
    JSON.stringify(rendered.objects),
    "a second render is identical",
  );
  return rendered.objects;
}

function find<T extends KubernetesObject>(
  objects: readonly KubernetesObject[],
  kind: string,
  name?: string,
): T {
  const hit = objects.find((o) => o.kind === kind && (name === undefined || o.metadata?.name === name));
  if (!hit) throw new Error(`no ${kind} ${name ?? ""} among ${objects.map((o) => o.kind).join(", ")}`);
  return hit as T;
}

const envOf = (spec: V1PodSpec | undefined, container = 0): Record<string, string | undefined> =>
  Object.fromEntries((spec?.containers[container]?.env ?? []).map((e) => [e.name, e.value]));

t.test("a Deployment Task becomes a labelled Deployment with its nodeSelector and ssh key", async (t) => {
  const task = kubeTask(
    "ppo",
    "actor",
    {
      kind: "Deployment",
      replicas: 3,
      template: {
        metadata: { labels: { app: "trainer" } },
        spec: {
          nodeSelector: { "kubernetes.io/arch": "amd64" },
          containers: [trainer({ env: [{ name: "RLARK_TASK", value: "mine" }] })],
        },
      },
    },
    { nodeSelector: { "nvidia.com/gpu": "true" }, sshPublicKey: SSH_KEY },
  );
  const objects = golden(t, "deployment", task);
  const deployment = find<V1Deployment>(objects, "Deployment", "ppo-actor");
  t.equal(deployment.metadata?.namespace, "rlark-system", "the default namespace");
  t.equal(deployment.spec?.replicas, 3);
  t.match(deployment.metadata?.labels, {
    "rlinf.io/job": "ppo",
    "rlinf.io/task": "actor",
    "rlark.io/task": "ppo-actor",
    "rlark.io/managed-by": "rlark-agent",
  });
  const pod = deployment.spec?.template;
  t.match(pod?.metadata?.labels, {
    app: "trainer",
    "rlinf.io/job": "ppo",
    "rlinf.io/task": "actor",
    "rlark.io/task": "ppo-actor",
  });
  t.same(deployment.spec?.selector.matchLabels, {
    "rlark.io/managed-by": "rlark-agent",
    "rlark.io/task": "ppo-actor",
  });
  t.same(
    pod?.spec?.nodeSelector,
    { "kubernetes.io/arch": "amd64", "nvidia.com/gpu": "true" },
    "the Task's nodeSelector is merged into the template's",
  );
  t.equal(pod?.metadata?.annotations?.["rlark.io/task-uid"], "uid-ppo-actor", "pods carry the Task uid");
  const env = envOf(pod?.spec);
  t.equal(env.RLARK_TASK, "mine", "a variable the Task sets itself wins");
  t.equal(env.RLARK_SSH_PUBLIC_KEY, SSH_KEY, "the ssh key is in the environment");
  t.equal(pod?.spec?.containers[0]?.env?.filter((e) => e.name === "RLARK_TASK").length, 1, "no duplicates");
  const ssh = find<V1ConfigMap>(objects, "ConfigMap", "ppo-actor-ssh");
  t.equal(ssh.data?.authorized_keys, `${SSH_KEY}\n`);
  t.same(pod?.spec?.containers[0]?.volumeMounts, [
    { mountPath: "/etc/rlark/ssh", name: "rlark-ssh", readOnly: true },
  ]);
  t.equal(objects.at(-1)?.kind, "Deployment", "the workload is applied after what it mounts");
});

t.test("a StatefulSet Task gets a headless Service named like it and keeps ephemeral volumes", async (t) => {
  const volume = {
    name: "data",
    ephemeral: {
      volumeClaimTemplate: {
        spec: {
          accessModes: ["ReadWriteOnce"],
          storageClassName: "ceph-rbd",
          resources: { requests: { storage: "10Gi" } },
        },
      },
    },
  };
  const task = kubeTask("ppo", "rollout", {
    kind: "StatefulSet",
    replicas: 2,
    template: {
      namespace: "training",
      spec: {
        containers: [trainer({ volumeMounts: [{ name: "data", mountPath: "/data" }] })],
        volumes: [volume],
      },
    },
  });
  const objects = golden(t, "statefulset", task);
  const sts = find<V1StatefulSet>(objects, "StatefulSet", "ppo-rollout");
  const service = find<V1Service>(objects, "Service", "ppo-rollout");
  t.equal(sts.metadata?.namespace, "training", "the template's namespace");
  t.equal(sts.spec?.serviceName, "ppo-rollout");
  t.equal(service.spec?.clusterIP, "None", "the Service is headless");
  t.same(service.spec?.selector, sts.spec?.selector.matchLabels, "it selects the StatefulSet's pods");
  const rendered = sts.spec?.template.spec?.volumes?.[0];
  t.same(
    rendered?.ephemeral?.volumeClaimTemplate?.spec,
    volume.ephemeral.volumeClaimTemplate.spec,
    "the claim template's spec is kept as given",
  );
  t.match(
    rendered?.ephemeral?.volumeClaimTemplate?.metadata?.labels,
    { "rlark.io/task": "ppo-rollout", "rlinf.io/task": "rollout", "rlark.io/managed-by": "rlark-agent" },
    "the PVCs Kubernetes makes from it are labelled for the Task",
  );
});

t.test(
  "a Job Task runs once, and a Task with a domain gets the network init container and sidecar",
  async (t) => {
    const task = kubeTask(
      "eval",
      "bench",
      {
        kind: "Job",
        replicas: 2,
        template: {
          spec: {
            containers: [trainer({ command: ["python", "eval.py"] })],
            initContainers: [{ name: "fetch", image: "busybox" }],
          },
        },
      },
      { domain: "ppo-experiment-1", domainCIDR: "10.0.1.0/24" },
    );
    const options = { sidecar: { image: "rlark/rlark:0.1.0" } };
    const objects = golden(t, "job-with-sidecar", task, options);
    const job = find<V1Job>(objects, "Job", "eval-bench");
    t.equal(job.spec?.parallelism, 2);
    t.equal(job.spec?.completions, 2);
    t.equal(job.spec?.backoffLimit, 0, "the cluster does not retry a Task");
    t.equal(job.spec?.template.spec?.restartPolicy, "Never");
    const pod = job.spec?.template.spec;
    t.same(
      pod?.initContainers?.map((c) => c.name),
      ["rlark-net-init", "rlark-sidecar", "fetch"],
      "the redirect and the sidecar come before the Task's own init containers",
    );
    const [init, sidecar] = pod?.initContainers ?? [];
    const env = (c: typeof init) =>
      Object.fromEntries((c?.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
    t.equal(init?.image, "rlark/rlark:0.1.0");
    t.same(init?.command, ["rlark-net", "init"]);
    t.same(init?.securityContext, {
      runAsUser: 0,
      runAsNonRoot: false,
      capabilities: { add: ["NET_ADMIN", "NET_RAW"], drop: ["ALL"] },
    });
    t.same(env(init), {
      RLARK_DOMAIN_CIDR: "10.0.1.0/24",
      RLARK_SIDECAR_UID: "1337",
      RLARK_OUTBOUND_PORT: "15001",
      RLARK_INBOUND_PORT: "5700",
    });
    t.equal(sidecar?.image, "rlark/rlark:0.1.0");
    t.same(sidecar?.args, ["sidecar"], "args for the image's entrypoint (node rlark.js)");
    t.equal(sidecar?.restartPolicy, "Always", "a native sidecar, so a finished Job's pod ends");
    t.same(sidecar?.securityContext, {
      runAsUser: 1337,
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
    });
    t.same(env(sidecar), {
      RLARK_DOMAIN: "ppo-experiment-1",
      RLARK_POD_NAME: { fieldRef: { fieldPath: "metadata.name" } },
      RLARK_POD_NAMESPACE: { fieldRef: { fieldPath: "metadata.namespace" } },
      RLARK_NODESERVER_SOCKET: "/var/run/rlark/nodeserver.sock",
      RLARK_OUTBOUND_PORT: "15001",
      RLARK_INBOUND_PORT: "5700",
    });
    t.same(sidecar?.ports, [{ containerPort: 5700, name: "rlark-inbound", protocol: "TCP" }]);
    t.same(sidecar?.volumeMounts, [{ mountPath: "/var/run/rlark", name: "rlark-nodeserver" }]);
    t.same(pod?.volumes, [
      { hostPath: { path: "/var/run/rlark", type: "DirectoryOrCreate" }, name: "rlark-nodeserver" },
    ]);
    const defaulted = renderTask(task, {});
    t.equal(
      find<V1Job>(defaulted.objects, "Job").spec?.template.spec?.initContainers?.[0]?.image,
      `rlark/sidecar:${packageJson.version}`,
      "without --sidecar-image: rlark/sidecar (rlark-net, iptables) of this version",
    );
    const noDomain = renderTask({ ...task, spec: { ...task.spec, domain: undefined } }, options);
    t.same(
      find<V1Job>(noDomain.objects, "Job").spec?.template.spec?.initContainers?.map((c) => c.name),
      ["fetch"],
      "no sidecar without a domain",
    );
    t.throws(
      () => renderTask({ ...task, spec: { ...task.spec, domainCIDR: undefined } }, options),
      /Task eval-bench: spec.domainCIDR is missing/,
      "a domain without its CIDR is refused, saying why",
    );
  },
);

t.test("a DaemonSet Task renders without replicas", async (t) => {
  const task = kubeTask("edge", "camera", {
    kind: "DaemonSet",
    replicas: 4,
    template: { spec: { containers: [trainer()] } },
  });
  const objects = golden(t, "daemonset", task);
  const ds = find<KubernetesObject & { spec: Record<string, unknown> }>(objects, "DaemonSet", "edge-camera");
  t.notOk("replicas" in ds.spec, "a DaemonSet runs one pod per node");
});

t.test("Ray head and worker Tasks get the scripts, the rewritten command and the head Service", async (t) => {
  const head = kubeTask(
    "ppo",
    "actor-head",
    {
      kind: "Deployment",
      template: {
        namespace: "ray",
        spec: { containers: [trainer({ command: ["python"], args: ["train.py"] })] },
      },
    },
    { annotations: { "rlinf.io/ray-role": "head", "rlinf.io/ray-total-nodes": "5" } },
  );
  const worker = kubeTask(
    "ppo",
    "rollout",
    { kind: "StatefulSet", replicas: 4, template: { spec: { containers: [trainer()] } } },
    { annotations: { "rlinf.io/ray-role": "worker", "rlinf.io/ray-head-task-name": "actor-head" } },
  );
  const desired = [head, worker];
  const headObjects = golden(t, "ray-head", head, { desired });
  const workerObjects = golden(t, "ray-worker", worker, { desired });

  const headDeployment = find<V1Deployment>(headObjects, "Deployment");
  const main = headDeployment.spec?.template.spec?.containers[0];
  t.same(main?.command, ["bash", "/etc/rlark/ray/ray_head.sh"], "the head runs ray_head.sh");
  t.same(main?.args, ["python", "train.py"], "the original command runs once Ray is up");
  const env = envOf(headDeployment.spec?.template.spec);
  t.equal(env.RLARK_RAY_PORT, "6379");
  t.equal(env.RLARK_RAY_TOTAL_NODES, "5");
  t.equal(env.RLARK_HEAD_ADDRESS, "ppo-actor-head-ray-head.ray.svc:6379");
  const service = find<V1Service>(headObjects, "Service", "ppo-actor-head-ray-head");
  t.same(
    service.spec?.ports?.map((p) => p.port),
    [6379, 8265, 8080],
    "the head Service exposes GCS, dashboard and metrics",
  );
  t.same(service.spec?.selector, headDeployment.spec?.selector.matchLabels, "it selects the head's pods");
  const scripts = find<V1ConfigMap>(headObjects, "ConfigMap", "ppo-actor-head-ray");
  t.same(Object.keys(scripts.data ?? {}), ["ray_check.py", "ray_head.sh", "ray_worker.sh"]);
  t.match(scripts.data?.["ray_head.sh"], /ray start .*--block/s);
  t.match(scripts.data?.["ray_head.sh"], /--head --port="\$\{RLARK_RAY_PORT\}" --dashboard-host=0\.0\.0\.0/);

  const sts = find<V1StatefulSet>(workerObjects, "StatefulSet");
  const workerMain = sts.spec?.template.spec?.containers[0];
  t.same(workerMain?.command, ["bash", "/etc/rlark/ray/ray_worker.sh"]);
  t.notOk(workerMain?.args, "no command of its own: the worker keeps Ray in the foreground");
  const workerEnv = envOf(sts.spec?.template.spec);
  t.equal(
    workerEnv.RLARK_HEAD_ADDRESS,
    "ppo-actor-head-ray-head.ray.svc:6379",
    "the worker finds the head's namespace",
  );
  t.equal(workerEnv.RLARK_RAY_HEAD_TASK, "ppo-actor-head");
  t.notOk(
    workerObjects.some((o) => o.kind === "Service" && o.metadata?.name?.endsWith("-ray-head")),
    "only the head has a head Service",
  );
  t.match(find<V1ConfigMap>(workerObjects, "ConfigMap").data?.["ray_worker.sh"], /ray_check\.py" address/);
});

t.test(
  "a Ray worker whose head is in another cluster of its Domain reaches the head's virtual IP",
  async (t) => {
    const inDomain = { annotations: {}, domain: "lab", domainCIDR: "10.77.0.0/24" };
    const worker = kubeTask(
      "ppo",
      "rollout",
      { kind: "Job", template: { spec: { containers: [trainer({ command: ["python", "go.py"] })] } } },
      {
        ...inDomain,
        annotations: { "rlinf.io/ray-role": "worker", "rlinf.io/ray-head-task-name": "actor-head" },
      },
    );
    // the head is not in this agent's desired set: it runs in another cluster
    const unknown = renderTask(worker, { desired: [worker], domainTasks: () => undefined });
    const cm = (objects: typeof unknown.objects) =>
      objects.find((o) => o.kind === "ConfigMap" && o.metadata?.name === "ppo-rollout-ray") as V1ConfigMap;
    t.equal(cm(unknown.objects).data?.head_address, "", "the head's address is not known yet: empty");
    const lookups: string[] = [];
    const known = renderTask(worker, {
      desired: [worker],
      domainTasks: (domain, task) => {
        lookups.push(`${domain}/${task}`);
        return task === "ppo-actor-head" ? ["10.77.0.9", "10.77.0.12"] : undefined;
      },
    });
    t.same(lookups, ["lab/ppo-actor-head"], "looked up by Domain and the head Task's name");
    t.equal(cm(known.objects).data?.head_address, "10.77.0.9:6379", "the head pod's virtual IP and GCS port");
    const job = known.objects.find((o) => o.kind === "Job") as { spec: { template: { spec: V1PodSpec } } };
    const pod = job.spec.template.spec;
    const env = envOf(pod);
    t.equal(env.RLARK_HEAD_ADDRESS, "", "no Service name that the worker's cluster could not resolve");
    t.equal(env.RLARK_DOMAIN_IP_FILE, "/var/run/rlark-domain/ip");
    const sidecar = pod.initContainers?.find((c) => c.name === "rlark-sidecar");
    t.equal(
      sidecar?.env?.find((e) => e.name === "RLARK_DOMAIN_IP_FILE")?.value,
      "/var/run/rlark-domain/ip",
      "the sidecar writes the pod's virtual IP there",
    );
    t.same(
      sidecar?.volumeMounts?.find((m) => m.name === "rlark-domain-ip"),
      { name: "rlark-domain-ip", mountPath: "/var/run/rlark-domain" },
    );
    t.same(
      pod.containers[0]?.volumeMounts?.find((m) => m.name === "rlark-domain-ip"),
      { name: "rlark-domain-ip", mountPath: "/var/run/rlark-domain", readOnly: true },
      "the Ray container reads it",
    );
    t.ok(pod.volumes?.some((v) => v.name === "rlark-domain-ip" && v.emptyDir));
    // Ray binds its node IP: an init container after the (native) sidecar puts it on lo, so the
    // Ray container starts with it in place and needs no capability of its own
    t.same(
      pod.initContainers?.map((c) => c.name),
      ["rlark-net-init", "rlark-sidecar", "rlark-lo-addr"],
      "the address is put on lo after the sidecar has started and before the Ray container",
    );
    const loAddr = pod.initContainers?.find((c) => c.name === "rlark-lo-addr");
    t.same(loAddr?.command, ["rlark-net", "lo-addr"]);
    t.not(loAddr?.restartPolicy, "Always", "it runs to completion, it is no sidecar");
    t.same(loAddr?.securityContext, {
      runAsUser: 0,
      runAsNonRoot: false,
      allowPrivilegeEscalation: false,
      capabilities: { add: ["NET_ADMIN"], drop: ["ALL"] },
    });
    t.same(envOf({ containers: [loAddr ?? { name: "none" }] }), {
      RLARK_DOMAIN_IP_FILE: "/var/run/rlark-domain/ip",
      RLARK_DOMAIN_CIDR: inDomain.domainCIDR,
      RLARK_IP_WAIT_SECONDS: "600",
    });
    t.same(loAddr?.volumeMounts, [
      { name: "rlark-domain-ip", mountPath: "/var/run/rlark-domain", readOnly: true },
    ]);
    t.notOk(
      pod.containers.some((c) => c.securityContext?.capabilities?.add?.length),
      "no long-running container is given a capability",
    );

    // the same worker with its head in this cluster: the Service, no head_address
    const head = kubeTask(
      "ppo",
      "actor-head",
      { kind: "Deployment", template: { spec: { containers: [trainer()] } } },
      { ...inDomain, annotations: { "rlinf.io/ray-role": "head" } },
    );
    const local = renderTask(worker, { desired: [head, worker], domainTasks: () => ["10.77.0.9"] });
    t.notOk("head_address" in (cm(local.objects).data ?? {}));
    const localJob = local.objects.find((o) => o.kind === "Job") as {
      spec: { template: { spec: V1PodSpec } };
    };
    t.equal(
      envOf(localJob.spec.template.spec).RLARK_HEAD_ADDRESS,
      "ppo-actor-head-ray-head.rlark-system.svc:6379",
    );
    // a Ray Task in no Domain gets no address file
    const plain = renderTask(
      kubeTask(
        "ppo",
        "w",
        { kind: "Job", template: { spec: { containers: [trainer()] } } },
        {
          annotations: { "rlinf.io/ray-role": "head" },
        },
      ),
    );
    const plainJob = plain.objects.find((o) => o.kind === "Job") as {
      spec: { template: { spec: V1PodSpec } };
    };
    t.notOk(envOf(plainJob.spec.template.spec).RLARK_DOMAIN_IP_FILE);
  },
);

t.test("a Task the runtime cannot run is refused with the field to fix", async (t) => {
  const noWorkload: RuntimeTask = {
    metadata: { name: "x-y" },
    spec: { agentType: "Kubernetes", kubernetes: {} },
  };
  t.throws(() => renderTask(noWorkload), RenderError);
  t.throws(() => renderTask(noWorkload), /spec\.kubernetes\.workload is missing/);
  const noContainers = kubeTask("x", "y", { kind: "Deployment", template: { spec: { containers: [] } } });
  t.throws(() => renderTask(noContainers), /at least one container/);
  const badKind = kubeTask("x", "y", { kind: "CronJob", template: { spec: { containers: [trainer()] } } });
  t.throws(() => renderTask(badKind), /kind must be one of/);
  const neverDeployment = kubeTask("x", "y", {
    kind: "Deployment",
    template: { spec: { restartPolicy: "Never", containers: [trainer()] } },
  });
  t.throws(() => renderTask(neverDeployment), /restartPolicy must be Always for a Deployment/);
  const alwaysJob = kubeTask("x", "y", {
    kind: "Job",
    template: { spec: { restartPolicy: "Always", containers: [trainer()] } },
  });
  t.throws(() => renderTask(alwaysJob), /restartPolicy must be Never or OnFailure for a Job/);
  const worker = kubeTask(
    "x",
    "y",
    { kind: "Deployment", template: { spec: { containers: [trainer()] } } },
    { annotations: { "rlinf.io/ray-role": "worker" } },
  );
  t.throws(() => renderTask(worker), /rlinf\.io\/ray-head-task-name/);
});

t.test("names longer than a DNS label are cut with a hash, so they never collide", async (t) => {
  const long = "a".repeat(60);
  const one = dnsLabel(long, "ray-head");
  const two = dnsLabel(long, "ray-hea");
  t.ok(one.length <= 63 && two.length <= 63);
  t.not(one, two);
  t.match(one, /^a+-[0-9a-f]{8}$/);
  t.equal(dnsLabel("ppo", "actor"), "ppo-actor", "short names are kept");
});
