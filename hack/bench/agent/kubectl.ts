// The baseline for the agent's applies: `kubectl apply --server-side` of the same objects against
// the same API server, timed from the process start to its exit, with a watch on the namespace
// for when the first and the last workload appeared. kubectl is built from the same Kubernetes
// module as hack/kube (`hack/kube/build --kubectl`).
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { CoreV1Api, KubeConfig, type KubernetesObject, Watch } from "@kubernetes/client-node";
import { kubectlBinary, repoRoot } from "../../kube/paths.ts";

/** When workloads of one kind appear in a namespace, in ms after `start()`. */
export interface CreationClock {
  start(): void;
  firstMs(): number | undefined;
  allMs(): number | undefined;
  count(): number;
  stop(): void;
}

/** Watches `path` (a namespaced collection) and notes when the first and the `expected`-th object was added. */
export async function creationClock(
  kc: KubeConfig,
  watchPath: string,
  expected: number,
): Promise<CreationClock> {
  let t0 = performance.now();
  let first: number | undefined;
  let all: number | undefined;
  const seen = new Set<string>();
  const abort = await new Watch(kc).watch(
    watchPath,
    {},
    (type, obj: KubernetesObject) => {
      if (type !== "ADDED") return;
      seen.add(obj.metadata?.name ?? "");
      const now = performance.now() - t0;
      first ??= now;
      if (seen.size >= expected) all ??= now;
    },
    () => undefined,
  );
  return {
    start: () => {
      t0 = performance.now();
    },
    firstMs: () => first,
    allMs: () => all,
    count: () => seen.size,
    stop: () => abort.abort(),
  };
}

export interface KubectlResult {
  version: string;
  /** kubectl's process, start to exit. */
  wallMs: number;
  firstMs?: number;
  allMs?: number;
  created: number;
}

/** Builds kubectl if it is not in the cache yet; its path. */
export function ensureKubectl(): string {
  const build = spawnSync("bash", [path.join(repoRoot, "hack/kube/build"), "--kubectl"], {
    stdio: ["ignore", 2, 2],
  });
  if (build.status !== 0)
    throw new Error(`hack/kube/build --kubectl failed (exit ${build.status ?? build.signal})`);
  return kubectlBinary();
}

/** Applies `objects` (moved to `namespace`, which is made here) with kubectl, timing it. */
export async function runKubectlBaseline(options: {
  kubectl: string;
  kubeconfigFile: string;
  namespace: string;
  /** Deployments among them: their creation is what is timed. */
  objects: KubernetesObject[];
}): Promise<KubectlResult> {
  const kc = new KubeConfig();
  kc.loadFromFile(options.kubeconfigFile);
  await kc.makeApiClient(CoreV1Api).createNamespace({
    body: { metadata: { name: options.namespace, labels: { "rlark.io/bench": "true" } } },
  });
  const work = await mkdtemp(path.join(tmpdir(), "rlark-bench-kubectl-"));
  try {
    const file = path.join(work, "objects.json");
    const items = options.objects.map((o) => ({
      ...o,
      metadata: { ...o.metadata, namespace: options.namespace },
    }));
    await writeFile(file, JSON.stringify({ apiVersion: "v1", kind: "List", items }));
    const version =
      spawnSync(options.kubectl, ["version", "--client"], { encoding: "utf8" }).stdout.split("\n")[0] ?? "";
    const clock = await creationClock(
      kc,
      `/apis/apps/v1/namespaces/${options.namespace}/deployments`,
      items.filter((o) => o.kind === "Deployment").length,
    );
    try {
      clock.start();
      const started = performance.now();
      const child = spawn(
        options.kubectl,
        [
          "--kubeconfig",
          options.kubeconfigFile,
          "apply",
          "--server-side",
          "--force-conflicts",
          "--field-manager=rlark-bench-kubectl",
          "-f",
          file,
        ],
        { stdio: ["ignore", "ignore", "pipe"] },
      );
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => {
        if (stderr.length < 64 << 10) stderr += chunk.toString("utf8");
      });
      const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
      const wallMs = performance.now() - started;
      if (code !== 0) throw new Error(`kubectl apply exited ${code}: ${stderr.trim()}`);
      // the watch may deliver the last ADDED a moment after kubectl exits
      const deadline = performance.now() + 10_000;
      while (clock.allMs() === undefined && performance.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      const firstMs = clock.firstMs();
      const allMs = clock.allMs();
      return {
        version,
        wallMs,
        ...(firstMs === undefined ? {} : { firstMs }),
        ...(allMs === undefined ? {} : { allMs }),
        created: clock.count(),
      };
    } finally {
      clock.stop();
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
