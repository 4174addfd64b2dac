// Real Ray on Kubernetes across two clusters (as root; not in CI: too heavy for 2 cores). A
// real-node fleet of its own (2 clusters, one real kubelet node each), an image with `ray` from
// PyPI built here and imported into both nodes, a hub with its Domain relay, per cluster a
// kubernetes-runtime agent and the nodeserver DaemonSet; a Job in a Domain whose `head` task
// (cluster k1, rlinf.io/ray-role: head, ray-total-nodes 2) and `worker` task (k2, ray-role worker)
// run the agent's own ConfigMap scripts unchanged: the worker learns the head's virtual IP from its
// ConfigMap (head_address), both advertise their virtual IPs, the head waits for 2 nodes and then
// runs its command, a driver that runs a task pinned to the worker's node. Prints PASS or FAIL;
// removes everything it started (the fleet with hack/kube/down).
//
//   node_modules/.bin/node hack/demo/ray-k8s-two-clusters/run.ts
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import type { Test } from "tap";
import { repoRoot } from "../../../hack/kube/paths.ts";
import { type DomainPeer, TASK_NAME_LABEL } from "../../../operators/api/index.ts";
import { type FleetCluster, realNodeFleetClusters, testNamespace } from "../../../tests/helpers/fleet.ts";
import { startHubOnGit } from "../../../tests/helpers/hub-on-git.ts";
import { clusterYaml, domainYaml, jobYaml } from "../../../tests/helpers/job-yaml.ts";
import { type RealDomainSite, startRealDomainSites } from "../../../tests/helpers/real-domain-sites.ts";
import {
  importIntoRealNodes,
  RLARK_IMAGE,
  realRayTaskYaml,
  rlarkImageArchives,
  SIDECAR_IMAGE,
} from "../../../tests/helpers/real-pods.ts";
import { waitFor } from "../../../tests/helpers/wait-for.ts";
import { RAY_VERSION, rayVenv } from "../ray-venv.ts";
import { buildRayImage } from "./image.ts";

const RAY_IMAGE = `rlark.local/ray:${RAY_VERSION}`;
/** Checks of slow things on a loaded machine: up to 15 minutes, a second apart. */
const slowly = { attempts: 900, everyMs: 1000 };

/** tap's Test as far as the helpers use it: teardowns, run here last added first. */
class Teardowns {
  readonly #steps: (() => unknown)[] = [];
  teardown(step: () => unknown): void {
    this.#steps.push(step);
  }
  async run(): Promise<void> {
    for (const step of this.#steps.splice(0).reverse())
      try {
        await step();
      } catch (error) {
        console.error(`cleanup: ${(error as Error).message}`);
      }
  }
}

// Ray's own knobs, in the Task's env: a small object store (the pods' /dev/shm is 64 MB), no usage stats.
const RAY_ENV = `                  env:
                    - { name: RAY_USAGE_STATS_ENABLED, value: "0" }
                    - { name: RAY_DISABLE_DOCKER_CPU_WARNING, value: "1" }
                    - { name: RAY_DEFAULT_OBJECT_STORE_MAX_MEMORY_BYTES, value: "100000000" }
`;

const rayTask = (
  name: string,
  cluster: string,
  namespace: string,
  annotations: Record<string, string>,
  command?: string[],
) =>
  realRayTaskYaml({
    name,
    cluster,
    namespace,
    annotations,
    image: RAY_IMAGE,
    container: RAY_ENV,
    terminationGracePeriodSeconds: 5,
    ...(command ? { command } : {}),
  });

// The head's command: ray_head.sh runs it once both nodes are alive. A Ray driver that runs a task
// pinned to the other node (hard node affinity) and prints where it ran.
const DRIVER = `
import json, os, socket, ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
me = os.environ["RLARK_RAY_NODE_IP"]
ray.init(address="auto", _node_ip_address=me, log_to_driver=False)
nodes = [n for n in ray.nodes() if n["Alive"]]
print("alive nodes:", sorted(n["NodeManagerAddress"] for n in nodes), flush=True)
other = next(n for n in nodes if n["NodeManagerAddress"] != me)
@ray.remote(num_cpus=0)
def where():
    return {"hostname": socket.gethostname(), "ip": ray.util.get_node_ip_address(), "node": ray.get_runtime_context().get_node_id()}
ref = where.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=other["NodeID"], soft=False)).remote()
print("task ran at:", json.dumps(ray.get(ref, timeout=600)), flush=True)
`;

const HEAD_COMMAND = ["sh", "-c", `python3 -c '${DRIVER}'; echo "driver exited $?"; exec sleep 2147483647`];

async function main(): Promise<boolean> {
  const venv = rayVenv();
  const fleetDir = path.join(repoRoot, ".cache/fleet-ray-k8s-demo");
  process.env.RLARK_REAL_FLEET_DIR = fleetDir;
  const teardowns = new Teardowns();
  const t = teardowns as unknown as Test;
  const work = mkdtempSync(path.join(tmpdir(), "rlray-k8s-"));
  const interrupted = () => {
    console.log("interrupted: cleaning up");
    void cleanup().then(() => process.exit(130));
  };
  const cleanup = async () => {
    await teardowns.run();
    spawnSync("bash", [path.join(repoRoot, "hack/kube/down")], {
      stdio: "inherit",
      env: { ...process.env, RLARK_FLEET_DIR: fleetDir },
    });
    rmSync(work, { recursive: true, force: true });
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  const started = Date.now();
  const since = () => `${Math.round((Date.now() - started) / 1000)}s`;
  let sites: [RealDomainSite, RealDomainSite] | undefined;
  try {
    const [k1, k2] = realNodeFleetClusters() as [FleetCluster, FleetCluster];
    console.log(`[${since()}] fleet up in ${fleetDir}`);
    const archive = buildRayImage(work, venv, RAY_IMAGE);
    importIntoRealNodes([...rlarkImageArchives(), archive], [RLARK_IMAGE, SIDECAR_IMAGE, RAY_IMAGE]);
    console.log(`[${since()}] images imported into both real nodes`);
    const ns1 = await testNamespace(t, k1.kubeConfig, "ray-demo");
    const ns2 = await testNamespace(t, k2.kubeConfig, "ray-demo");
    sites = [
      { name: "k1", cluster: k1, namespace: ns1 },
      { name: "k2", cluster: k2, namespace: ns2 },
    ];
    const files = {
      "clusters.yaml": `${clusterYaml("k1", "kubernetes")}---\n${clusterYaml("k2", "kubernetes")}`,
      "domains.yaml": domainYaml("raynet", "10.79.0.0/24"),
      "ray.yaml": jobYaml(
        "ray",
        [
          rayTask(
            "head",
            "k1",
            ns1,
            { "rlinf.io/ray-role": "head", "rlinf.io/ray-total-nodes": "2" },
            HEAD_COMMAND,
          ),
          rayTask("worker", "k2", ns2, {
            "rlinf.io/ray-role": "worker",
            "rlinf.io/ray-head-task-name": "head",
          }),
        ],
        { domain: "raynet" },
      ),
    };
    const { hub } = await startHubOnGit(t, { files, domainRelay: "127.0.0.1:0" });
    for (const name of ["k1", "k2"])
      await waitFor(
        `Cluster ${name} from git`,
        async () => hub.store.get("Cluster", undefined, name),
        slowly,
      );
    await startRealDomainSites(t, hub, sites, randomBytes(3).toString("hex"));
    console.log(`[${since()}] hub, agents and nodeservers up`);
    const running = async (site: RealDomainSite, task: string): Promise<V1Pod | undefined> => {
      const { items } = await site.cluster.kubeConfig.makeApiClient(CoreV1Api).listNamespacedPod({
        namespace: site.namespace,
        labelSelector: `${TASK_NAME_LABEL}=${task}`,
      });
      return items.find(
        (p) => !p.metadata?.deletionTimestamp && p.status?.containerStatuses?.some((c) => c.state?.running),
      );
    };
    const [s1, s2] = sites;
    const head = await waitFor("the head pod running", () => running(s1, "ray-head"), slowly);
    const worker = await waitFor("the worker pod running", () => running(s2, "ray-worker"), slowly);
    const vip = (cluster: string, pod: V1Pod) =>
      waitFor(
        `${pod.metadata?.name}'s virtual IP`,
        async () =>
          (await hub.store.get<DomainPeer>("DomainPeer", `agent-${cluster}`, "raynet"))?.spec.pods?.find(
            (p) => p.name === pod.metadata?.name,
          )?.ip,
        slowly,
      );
    const headVip = await vip("k1", head);
    const workerVip = await vip("k2", worker);
    console.log(
      `[${since()}] head ${head.metadata?.name} (k1) ${headVip}, worker ${worker.metadata?.name} (k2) ${workerVip}`,
    );
    const log = (site: RealDomainSite, pod: V1Pod, container = "main") =>
      site.cluster.kubeConfig
        .makeApiClient(CoreV1Api)
        .readNamespacedPodLog({ namespace: site.namespace, name: pod.metadata?.name as string, container })
        .catch((error: Error) => `(no log: ${error.message})`);
    let last = "";
    const out = await waitFor(
      "the driver's result in the head's log",
      async () => {
        const text = await log(s1, head);
        const tail = text.trim().split("\n").slice(-1)[0] ?? "";
        if (tail !== last) {
          last = tail;
          console.log(`[${since()}] head: ${tail.slice(0, 200)}`);
        }
        return /task ran at: |driver exited [1-9]/.test(text) ? text : undefined;
      },
      slowly,
    );
    const lines = out.split("\n").filter((l) => /alive nodes:|task ran at:|driver exited/.test(l));
    for (const l of lines) console.log(l);
    const ran = JSON.parse(/task ran at: (.*)/.exec(out)?.[1] ?? "{}") as { ip?: string; hostname?: string };
    const relayed = hub.domainRelay?.stats().relayedBytes ?? 0;
    console.log(`the hub's domain relay carried ${relayed} bytes`);
    const pass = ran.ip === workerVip && relayed > 0;
    console.log(
      pass
        ? `PASS: the task ran on the worker (${workerVip}, pod ${ran.hostname}, cluster k2) [${since()}]`
        : `FAIL: the task ran at ${ran.ip} (worker ${workerVip}), hub relayed ${relayed} bytes`,
    );
    if (!pass) await diagnose(sites);
    return pass;
  } catch (error) {
    console.log(`FAIL: ${(error as Error).message}`);
    if (sites) await diagnose(sites);
    return false;
  } finally {
    await cleanup();
  }
}

/** The last lines of every container of the demo's pods, and their states. */
async function diagnose(sites: readonly RealDomainSite[]): Promise<void> {
  for (const site of sites) {
    const core = site.cluster.kubeConfig.makeApiClient(CoreV1Api);
    const { items } = await core.listNamespacedPod({ namespace: site.namespace });
    for (const pod of items) {
      const states = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
      for (const c of states) {
        const text = await core
          .readNamespacedPodLog({
            namespace: site.namespace,
            name: pod.metadata?.name as string,
            container: c.name,
            tailLines: 40,
          })
          .catch((error: Error) => `(no log: ${error.message})`);
        console.log(
          `--- ${site.name} ${pod.metadata?.name} ${c.name} (restarts ${c.restartCount}, ${JSON.stringify(c.state)})\n${text}`,
        );
      }
    }
  }
}

process.exitCode = (await main()) ? 0 : 1;
