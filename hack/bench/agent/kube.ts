// One git revision with N Kubernetes Tasks → hub (git source, Job controller, placement) →
// tunnel → kubernetes agent → server-side apply on a real local control plane (hack/kube, kwok
// nodes). Records when each stage has seen all N, from the moment the revision is pushed.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import {
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  type RequestContext,
} from "@kubernetes/client-node";
import { stringify } from "yaml";
import { type Agent, type RuntimeTask, startAgent } from "../../../operators/agent/index.ts";
import { KubernetesRuntime, renderTask } from "../../../operators/agent/runtimes/kubernetes/index.ts";
import { type Hub, startHub } from "../../../operators/hub/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { fileCredentialStore } from "../../../operators/lib/tunnel/index.ts";
import { createGitServer, type GitServer } from "../../../tests/helpers/git-server.ts";
import { hubOptions } from "../../../tests/helpers/hub-on-git.ts";
import { onKube, waitFor } from "../../../tests/helpers/wait-for.ts";
import { creationClock } from "./kubectl.ts";

const API = "rlinf.io/v1alpha1";
const CLUSTER = "bench";
const JOBS_PER_FILE = 25;

/** A KubeConfig that counts the server-side applies made through it. */
export class CountingKubeConfig extends KubeConfig {
  applies = 0;

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    if (context.getHeaders()["Content-Type"]?.startsWith("application/apply-patch")) this.applies++;
    return super.applySecurityAuthentication(context);
  }
}

export interface KubeOptions {
  tasks: number;
  /** The admin kubeconfig file of the cluster. */
  kubeconfigFile: string;
  /** Created here; the caller deletes it (deleteNamespace), also when this throws. */
  namespace: string;
  timeoutMs: number;
  /** Print every poll's counts to stderr. */
  verbose?: boolean;
}

export interface Milestone {
  what: string;
  /** Milliseconds after the push; undefined when not reached before the timeout. */
  ms?: number;
  /** How many of the expected were there at the end. */
  reached: number;
  expected: number;
}

export interface KubeResult {
  tasks: number;
  jobs: number;
  nodes: number;
  commitMs: number;
  milestones: Milestone[];
  /** Desired-set messages the agent received after the push, and the Tasks they carried. */
  messages: number;
  upserts: number;
  /** Server-side apply requests the agent made after the push. */
  applies: number;
  /** Event-loop delay of this process (hub, agent and poller share it), ms. */
  loopDelay: { p50: number; p99: number; max: number };
  /** From the push, by a watch on the namespace: the first and the last Deployment created. */
  firstDeploymentMs?: number;
  allDeploymentsMs?: number;
  /** What the agent applied, rendered again from the hub's Tasks: the baseline applies the same. */
  rendered: KubernetesObject[];
}

function task(name: string, role: string, namespace: string) {
  return {
    name,
    role,
    agentType: "Kubernetes",
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
                resources: { requests: { cpu: "10m", memory: "16Mi" } },
              },
            ],
          },
        },
      },
    },
  };
}

/** N tasks as N/2 Jobs of two Deployments each (the last Job has one when N is odd). */
function revision(tasks: number, namespace: string): { files: Record<string, string>; jobs: number } {
  const jobs: string[] = [];
  for (let j = 0; j * 2 < tasks; j++) {
    const templates = [task("actor", "Actor", namespace)];
    if (j * 2 + 1 < tasks) templates.push(task("env", "Env", namespace));
    jobs.push(
      stringify({
        apiVersion: API,
        kind: "Job",
        metadata: { name: `bench-${j}` },
        spec: { tasks: templates },
      }),
    );
  }
  const files: Record<string, string> = {};
  for (let f = 0; f * JOBS_PER_FILE < jobs.length; f++) {
    files[`jobs/batch-${f}.yaml`] = jobs.slice(f * JOBS_PER_FILE, (f + 1) * JOBS_PER_FILE).join("---\n");
  }
  return { files, jobs: jobs.length };
}

const clusterFile = stringify({
  apiVersion: API,
  kind: "Cluster",
  metadata: { name: CLUSTER },
  spec: { runtime: "kubernetes" },
});

const phaseOf = (o: { status?: unknown }) => (o.status as { phase?: string } | undefined)?.phase;

export async function runKubeBench(options: KubeOptions): Promise<KubeResult> {
  const { tasks: expected } = options;
  const kc = new KubeConfig();
  kc.loadFromFile(options.kubeconfigFile);
  const agentKc = new CountingKubeConfig();
  agentKc.loadFromFile(options.kubeconfigFile);
  const apps = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const { namespace } = options;
  const work = await mkdtemp(path.join(tmpdir(), "rlark-bench-agent-"));
  let git: GitServer | undefined;
  let hub: Hub | undefined;
  let runtime: KubernetesRuntime | undefined;
  let agent: Agent | undefined;
  await core.createNamespace({
    body: { metadata: { name: namespace, labels: { "rlark.io/bench": "true" } } },
  });
  try {
    git = await createGitServer();
    await git.commit({ "clusters.yaml": clusterFile }, "the cluster");
    hub = await startHub(hubOptions(git, path.join(work, "hub")));
    const store = hub.store;
    await waitFor("the Cluster from git", async () => store.get("Cluster", undefined, CLUSTER), onKube);
    const { token } = await hub.pki.enrollment.createToken({ cluster: CLUSTER, ttlMs: 600_000 });
    runtime = await KubernetesRuntime.start({
      kubeConfig: agentKc,
      defaultNamespace: namespace,
      instance: `bench${randomBytes(3).toString("hex")}`,
    });
    agent = await startAgent({
      hub: hub.sshAddress,
      credentials: fileCredentialStore(path.join(work, "agent-credentials.json")),
      token,
      caHash: hub.caFingerprint,
      runtime,
      runtimeKind: "kubernetes",
      logger: silentLogger,
    });
    // Placement needs the cluster's nodes: the revision lands on a cluster that is ready.
    const nodes = await waitFor(
      "the agent's nodes on the hub",
      async () => {
        const cluster = await store.get("Cluster", undefined, CLUSTER);
        const listed = await store.list("Node", { namespace: `agent-${CLUSTER}` });
        return phaseOf(cluster ?? {}) === "Online" && listed.items.length > 0
          ? listed.items.length
          : undefined;
      },
      onKube,
    );

    let messages = 0;
    let upserts = 0;
    agent.tunnel.on("delta", (delta) => {
      messages++;
      upserts += delta.upserts.length;
    });
    agent.tunnel.on("snapshot", (snapshot) => {
      messages++;
      upserts += snapshot.objects.length;
    });
    const appliesBefore = agentKc.applies;
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();

    const { files, jobs } = revision(expected, namespace);
    const clock = await creationClock(kc, `/apis/apps/v1/namespaces/${namespace}/deployments`, expected);
    const commitStarted = performance.now();
    await git.commit(files, `${expected} tasks`);
    const pushed = performance.now();
    clock.start();

    const stages: Array<{ what: string; expected: number; count: () => Promise<number> }> = [
      {
        what: "Jobs applied from git to the hub",
        expected: jobs,
        count: async () => (await store.list("Job")).items.length,
      },
      {
        what: "Tasks placed on the cluster (hub store)",
        expected,
        count: async () => (await store.list("Task", { namespace: `agent-${CLUSTER}` })).items.length,
      },
      {
        what: "Tasks received by the agent (tunnel)",
        expected,
        count: async () => agent?.desired().filter((o) => o.kind === "Task").length ?? 0,
      },
      {
        what: "Deployments created on the API server",
        expected,
        count: async () => (await apps.listNamespacedDeployment({ namespace })).items.length,
      },
      {
        what: "Pods Running on the kwok nodes",
        expected,
        count: async () =>
          (await core.listNamespacedPod({ namespace })).items.filter((p) => p.status?.phase === "Running")
            .length,
      },
      {
        what: "Tasks reported Running (hub store)",
        expected,
        count: async () =>
          (await store.list("Task", { namespace: `agent-${CLUSTER}` })).items.filter(
            (t) => phaseOf(t) === "Running",
          ).length,
      },
      {
        what: "Jobs Running (hub store)",
        expected: jobs,
        count: async () => (await store.list("Job")).items.filter((j) => phaseOf(j) === "Running").length,
      },
    ];
    const milestones: Milestone[] = stages.map((s) => ({ what: s.what, reached: 0, expected: s.expected }));
    const deadline = pushed + options.timeoutMs;
    let first = 0; // stages before this one are complete: only poll what can still change
    while (first < stages.length && performance.now() < deadline) {
      for (let i = first; i < stages.length; i++) {
        const stage = stages[i];
        const milestone = milestones[i];
        if (!stage || !milestone || milestone.ms !== undefined) continue;
        milestone.reached = await stage.count().catch(() => milestone.reached);
        if (milestone.reached >= stage.expected) milestone.ms = performance.now() - pushed;
      }
      while (milestones[first]?.ms !== undefined) first++;
      if (options.verbose) {
        const at = ((performance.now() - pushed) / 1000).toFixed(1);
        const counts = milestones.map((m) => m.reached).join(" ");
        console.error(
          `${at} s: ${counts} (${messages} messages, ${agentKc.applies - appliesBefore} applies)`,
        );
      }
      if (first < stages.length) await new Promise((r) => setTimeout(r, 250));
    }
    loop.disable();
    clock.stop();
    const placed = (await store.list("Task", { namespace: `agent-${CLUSTER}` }))
      .items as unknown as RuntimeTask[];
    const rendered = placed.flatMap(
      (t) => renderTask(t, { defaultNamespace: namespace, desired: placed }).objects as KubernetesObject[],
    );
    const firstDeploymentMs = clock.firstMs();
    const allDeploymentsMs = clock.allMs();
    return {
      ...(firstDeploymentMs === undefined ? {} : { firstDeploymentMs }),
      ...(allDeploymentsMs === undefined ? {} : { allDeploymentsMs }),
      rendered,
      messages,
      upserts,
      applies: agentKc.applies - appliesBefore,
      loopDelay: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
      tasks: expected,
      jobs,
      nodes,
      commitMs: pushed - commitStarted,
      milestones,
    };
  } finally {
    // The agent stops its runtime; without an agent the runtime's watches are ours to stop.
    await (agent ?? runtime)?.stop().catch(() => undefined);
    await hub?.stop().catch(() => undefined);
    await git?.close().catch(() => undefined);
    await rm(work, { recursive: true, force: true });
  }
}

/** Deletes the namespace and waits (bounded) until it is gone; returns how long that took. */
export async function deleteNamespace(
  kc: KubeConfig,
  namespace: string,
  timeoutMs = 90_000,
): Promise<number | undefined> {
  const core = kc.makeApiClient(CoreV1Api);
  const started = performance.now();
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  const deadline = started + timeoutMs;
  while (performance.now() < deadline) {
    const gone = await core.readNamespace({ name: namespace }).then(
      () => false,
      () => true,
    );
    if (gone) return performance.now() - started;
    await new Promise((r) => setTimeout(r, 500));
  }
  return undefined;
}
