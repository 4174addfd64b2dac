// Where the pinned control-plane binaries live (built by hack/kube/build) and where a fleet keeps
// its runtime state. Pure path logic: nothing here reads the environment at module load.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

export const repoRoot = resolve(import.meta.dirname, "../..");

export interface Versions {
  k8s: string;
  etcd: string;
  kwok: string;
}

export function readVersions(file = join(repoRoot, "hack/kube/versions.env")): Versions {
  const vars = new Map<string, string>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const m = /^([A-Z0-9_]+)=(\S+)\s*$/.exec(line);
    if (m) vars.set(m[1]!, m[2]!);
  }
  const get = (k: string): string => {
    const v = vars.get(k);
    if (!v) throw new Error(`${file}: ${k} is not set`);
    return v;
  };
  return { k8s: get("K8S_VERSION"), etcd: get("ETCD_VERSION"), kwok: get("KWOK_VERSION") };
}

export interface Binaries {
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  etcd: string;
  kwok: string;
  /** Folder of kwok Stage configs (node-initialize, heartbeat, pod-ready, ...). */
  kwokStages: string;
}

/** The kube cache root: `${RLARK_CACHE:-$HOME/.cache/rlark}/kube`. */
export function kubeCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.RLARK_CACHE || join(env.HOME || homedir(), ".cache/rlark"), "kube");
}

export function binaries(versions: Versions = readVersions(), cache = kubeCacheDir()): Binaries {
  const k8s = join(cache, `k8s-${versions.k8s}`, "bin");
  const kwok = join(cache, `kwok-${versions.kwok}`);
  return {
    kubeApiserver: join(k8s, "kube-apiserver"),
    kubeControllerManager: join(k8s, "kube-controller-manager"),
    kubeScheduler: join(k8s, "kube-scheduler"),
    etcd: join(cache, `etcd-${versions.etcd}`, "bin", "etcd"),
    kwok: join(kwok, "bin", "kwok"),
    kwokStages: join(kwok, "stages"),
  };
}

/** kubectl of the same Kubernetes version, built only by `hack/kube/build --kubectl`. */
export function kubectlBinary(versions: Versions = readVersions(), cache = kubeCacheDir()): string {
  return join(cache, `kubectl-${versions.k8s}`, "bin", "kubectl");
}

/** kubelet of the same Kubernetes version, built by `hack/kube/build --kubelet` (for real nodes). */
export function kubeletBinary(versions: Versions = readVersions(), cache = kubeCacheDir()): string {
  return join(cache, `kubelet-${versions.k8s}`, "bin", "kubelet");
}

/** Runtime state of the local fleet: `$RLARK_FLEET_DIR` or `<checkout>/.cache/fleet`. */
export function fleetDir(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.RLARK_FLEET_DIR || join(repoRoot, ".cache/fleet"));
}

/** One entry of `clusters.json`. */
export interface ClusterEntry {
  name: string;
  /** Absolute path of an admin kubeconfig. */
  kubeconfig: string;
  server: string;
}
