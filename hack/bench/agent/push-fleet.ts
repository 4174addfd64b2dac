// One git push → N Deployments spread over several clusters, each served by its own kubernetes
// agent (hack/kube clusters, kwok nodes), against `kubectl apply --server-side` of the same
// objects to the same API servers (one kubectl per cluster, all at once) in the same run.
// kube.ts measures the stages on one cluster; this measures the fleet. Asserts nothing.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { AppsV1Api, CoreV1Api, KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { type Agent, type RuntimeTask, startAgent } from "../../../operators/agent/index.ts";
import { KubernetesRuntime, renderTask } from "../../../operators/agent/runtimes/kubernetes/index.ts";
import { type Hub, startHub } from "../../../operators/hub/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { fileCredentialStore } from "../../../operators/lib/tunnel/index.ts";
import { createGitServer, type GitServer } from "../../../tests/helpers/git-server.ts";
import { hubOptions } from "../../../tests/helpers/hub-on-git.ts";
import { onKube, waitFor } from "../../../tests/helpers/wait-for.ts";
import { CountingKubeConfig } from "./kube.ts";
import { type CreationClock, creationClock } from "./kubectl.ts";

const API = "rlinf.io/v1alpha1";
const JOBS_PER_FILE = 50;
const SHARD_LABEL = "rlark.io/bench-shard";

export interface FleetTarget {
  /** The Cluster's name in git (and the agent's). */
  name: string;
  kubeconfigFile: string;
}

export interface PushFleetOptions {
  deployments: number;
  clusters: FleetTarget[];
  /** Created on every cluster here; the caller deletes it (also when this throws). */
  namespace: string;
  timeoutMs: number;
  verbose?: boolean;
}

export interface PushFleetResult {
  deployments: number;
  jobs: number;
  commitMs: number;
  /** From the push: every Task placed in the hub's store, every Task in its agent's desired set. */
  placedMs?: number;
  receivedMs?: number;
  /** From the push, by a watch per API server: the first and the last Deployment created. */
  firstMs?: number;
  allMs?: number;
  perCluster: { name: string; deployments: number; firstMs?: number; allMs?: number; applies: number }[];
  messages: number;
  upserts: number;
  loopDelay: { p50: number; p99: number; max: number };
  /** What each agent applied, rendered again from the hub's Tasks: the baseline applies the same. */
  rendered: Map<string, KubernetesObject[]>;
}

function deploymentTask(name: string, namespace: string, shard: number) {
  return {
    name,
    role: name === "actor" ? "Actor" : "Env",
    agentType: "Kubernetes",
    // One shard per cluster, so the revision spreads evenly and every agent has the same work.
    clusterSelector: { matchLabels: { [SHARD_LABEL]: String(shard) } },
    kubernetes: {
      workload: {
        kind: "Deployment",
        replicas: 1,
        template: {
          namespace,
          spec: {
            containers: [
              {
                name: "main",
                image: "registry.local/rlark/bench:1",
                resources: { requests: { cpu: "1m", memory: "4Mi" } },
              },
            ],
          },
        },
      },
    },
  };
}

/** N Deployments as N/2 Jobs of two Deployment tasks, Job j pinned to cluster j mod C. */
function revision(deployments: number, namespace: string, clusters: number) {
  const jobs: string[] = [];
  const perShard = new Array<number>(clusters).fill(0);
  for (let j = 0; j * 2 < deployments; j++) {
    const tasks = [deploymentTask("actor", namespace, j % clusters)];
    if (j * 2 + 1 < deployments) tasks.push(deploymentTask("env", namespace, j % clusters));
    perShard[j % clusters] = (perShard[j % clusters] as number) + tasks.length;
    jobs.push(stringify({ apiVersion: API, kind: "Job", metadata: { name: `push-${j}` }, spec: { tasks } }));
  }
  const files: Record<string, string> = {};
  for (let f = 0; f * JOBS_PER_FILE < jobs.length; f++)
    files[`jobs/batch-${f}.yaml`] = jobs.slice(f * JOBS_PER_FILE, (f + 1) * JOBS_PER_FILE).join("---\n");
  return { files, jobs: jobs.length, perShard };
}

export async function runPushFleetBench(options: PushFleetOptions): Promise<PushFleetResult> {
  const { namespace, deployments } = options;
  const work = await mkdtemp(path.join(tmpdir(), "rlark-bench-push-"));
  const sides = options.clusters.map((target, shard) => {
    const kc = new KubeConfig();
    kc.loadFromFile(target.kubeconfigFile);
    const agentKc = new CountingKubeConfig();
    agentKc.loadFromFile(target.kubeconfigFile);
    return { target, shard, kc, agentKc, apps: kc.makeApiClient(AppsV1Api) };
  });
  let git: GitServer | undefined;
  let hub: Hub | undefined;
  const agents: Agent[] = [];
  const clocks: CreationClock[] = [];
  try {
    for (const side of sides)
      await side.kc.makeApiClient(CoreV1Api).createNamespace({
        body: { metadata: { name: namespace, labels: { "rlark.io/bench": "true" } } },
      });
    git = await createGitServer();
    const clusterFiles = sides.map((s) =>
      stringify({
        apiVersion: API,
        kind: "Cluster",
        metadata: { name: s.target.name, labels: { [SHARD_LABEL]: String(s.shard) } },
        spec: { runtime: "kubernetes" },
      }),
    );
    await git.commit({ "clusters.yaml": clusterFiles.join("---\n") }, "the clusters");
    hub = await startHub(hubOptions(git, path.join(work, "hub")));
    const store = hub.store;
    for (const side of sides) {
      const name = side.target.name;
      await waitFor(`Cluster ${name} from git`, async () => store.get("Cluster", undefined, name), onKube);
      const { token } = await hub.pki.enrollment.createToken({ cluster: name, ttlMs: 600_000 });
      const runtime = await KubernetesRuntime.start({
        kubeConfig: side.agentKc,
        defaultNamespace: namespace,
        instance: `push${randomBytes(3).toString("hex")}`,
      });
      agents.push(
        await startAgent({
          hub: hub.sshAddress,
          credentials: fileCredentialStore(path.join(work, `agent-${name}.json`)),
          token,
          caHash: hub.caFingerprint,
          runtime,
          runtimeKind: "kubernetes",
          logger: silentLogger,
        }),
      );
    }
    // Placement needs each cluster's nodes: the revision lands on clusters that are ready.
    for (const side of sides) {
      const name = side.target.name;
      await waitFor(
        `the nodes of ${name} on the hub`,
        async () => {
          const cluster = await store.get("Cluster", undefined, name);
          const nodes = await store.list("Node", { namespace: `agent-${name}` });
          const phase = (cluster?.status as { phase?: string } | undefined)?.phase;
          return phase === "Online" && nodes.items.length > 0 ? true : undefined;
        },
        onKube,
      );
    }
    let messages = 0;
    let upserts = 0;
    for (const agent of agents) {
      agent.tunnel.on("delta", (delta) => {
        messages++;
        upserts += delta.upserts.length;
      });
      agent.tunnel.on("snapshot", (snapshot) => {
        messages++;
        upserts += snapshot.objects.length;
      });
    }
    const appliesBefore = sides.map((s) => s.agentKc.applies);
    const { files, jobs, perShard } = revision(deployments, namespace, sides.length);
    for (const [i, side] of sides.entries())
      clocks.push(
        await creationClock(
          side.kc,
          `/apis/apps/v1/namespaces/${namespace}/deployments`,
          perShard[i] as number,
        ),
      );
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const commitStarted = performance.now();
    await git.commit(files, `${deployments} deployments`);
    const pushed = performance.now();
    for (const clock of clocks) clock.start();

    let placedMs: number | undefined;
    let receivedMs: number | undefined;
    // A count by LIST next to each watch: a watch that ends (a long event-loop stall under load)
    // would otherwise leave the run waiting for events that never come.
    const listed = sides.map(() => 0);
    const listedAll: (number | undefined)[] = sides.map(() => undefined);
    const deadline = pushed + options.timeoutMs;
    while (performance.now() < deadline) {
      const at = performance.now() - pushed;
      if (placedMs === undefined) {
        const placed = (await store.list("Task")).items.filter((t) =>
          t.metadata.namespace?.startsWith("agent-"),
        ).length;
        if (placed >= deployments) placedMs = at;
      }
      const received = agents.reduce((n, a) => n + a.desired().filter((o) => o.kind === "Task").length, 0);
      if (receivedMs === undefined && received >= deployments) receivedMs = at;
      await Promise.all(
        sides.map(async (side, i) => {
          if (listedAll[i] !== undefined || clocks[i]?.allMs() !== undefined) return;
          const list = await side.apps
            .listNamespacedDeployment({ namespace, limit: 1 })
            .catch(() => undefined);
          if (!list) return;
          listed[i] = list.items.length + (list.metadata?.remainingItemCount ?? 0);
          if ((listed[i] as number) >= (perShard[i] as number)) listedAll[i] = performance.now() - pushed;
        }),
      );
      const created = sides.reduce(
        (n, _, i) => n + Math.max(clocks[i]?.count() ?? 0, listed[i] as number),
        0,
      );
      if (options.verbose)
        console.error(`${(at / 1000).toFixed(1)} s: received ${received}, created ${created}`);
      if (sides.every((_, i) => clocks[i]?.allMs() !== undefined || listedAll[i] !== undefined)) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    loop.disable();
    const firsts = clocks.map((c) => c.firstMs()).filter((ms): ms is number => ms !== undefined);
    const earliest = (a: number | undefined, b: number | undefined) =>
      a === undefined ? b : b === undefined ? a : Math.min(a, b);
    const alls = clocks.map((c, i) => earliest(c.allMs(), listedAll[i]));
    const rendered = new Map<string, KubernetesObject[]>();
    for (const side of sides) {
      const placed = (await store.list("Task", { namespace: `agent-${side.target.name}` }))
        .items as unknown as RuntimeTask[];
      rendered.set(
        side.target.name,
        placed.flatMap(
          (t) =>
            renderTask(t, { defaultNamespace: namespace, desired: placed }).objects as KubernetesObject[],
        ),
      );
    }
    const firstMs = firsts.length > 0 ? Math.min(...firsts) : undefined;
    const allMs = alls.every((ms) => ms !== undefined) ? Math.max(...(alls as number[])) : undefined;
    return {
      deployments,
      jobs,
      commitMs: pushed - commitStarted,
      ...(placedMs === undefined ? {} : { placedMs }),
      ...(receivedMs === undefined ? {} : { receivedMs }),
      ...(firstMs === undefined ? {} : { firstMs }),
      ...(allMs === undefined ? {} : { allMs }),
      perCluster: sides.map((side, i) => {
        const clock = clocks[i] as CreationClock;
        const first = clock.firstMs();
        const all = alls[i];
        return {
          name: side.target.name,
          deployments: Math.max(clock.count(), listed[i] as number),
          ...(first === undefined ? {} : { firstMs: first }),
          ...(all === undefined ? {} : { allMs: all }),
          applies: side.agentKc.applies - (appliesBefore[i] as number),
        };
      }),
      messages,
      upserts,
      loopDelay: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
      rendered,
    };
  } finally {
    for (const clock of clocks) clock.stop();
    for (const agent of agents) await agent.stop().catch(() => undefined);
    await hub?.stop().catch(() => undefined);
    await git?.close().catch(() => undefined);
    await rm(work, { recursive: true, force: true });
  }
}
