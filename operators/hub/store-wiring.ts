// The hub's store: SQLite in the data dir (one hub), or the CRDs on a kube-apiserver (several
// hubs, one leading). On Kubernetes the hub checks that every CRD is installed and the same as
// `rlark crds` renders before it reads anything, and says what to run when it is not: the hub
// does not install CRDs itself, so it needs no cluster-wide write on apiextensions.
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { API_VERSION, customResourceDefinitions, kinds } from "../api/index.ts";
import { KubeHttp, KubeHttpError } from "../lib/kube-http.ts";
import type { Logger } from "../lib/logger.ts";
import { deepEqual, openKubernetesStore, openSqliteStore, type Store } from "../lib/store/index.ts";

export interface KubernetesStoreSettings {
  /** A kubeconfig file; default: in-cluster, then $KUBECONFIG, then ~/.kube/config. */
  kubeconfig?: string;
  /** The namespace of the hub's own objects (its leader Lease). */
  namespace: string;
  /** The CRDs' group when it is not rlinf.io (several installations on one apiserver, tests). */
  servedGroup?: string;
}

export type StoreSettings = { backend: "sqlite" } | ({ backend: "kubernetes" } & KubernetesStoreSettings);

export function loadKubeConfig(file: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  if (file) kc.loadFromFile(file);
  else kc.loadFromDefault();
  return kc;
}

const settingsFile = (dataDir: string) => path.join(dataDir, "store.json");

export async function openHubStore(
  settings: StoreSettings,
  dataDir: string,
  kubeConfig: KubeConfig | undefined,
  logger?: Logger,
): Promise<Store> {
  // Recorded so that the CLI beside the hub (`rlark token create --data-dir`) reads the same store.
  await writeFile(settingsFile(dataDir), `${JSON.stringify(settings)}\n`, { mode: 0o600 });
  if (settings.backend === "sqlite") return openSqliteStore({ dataDir });
  if (!kubeConfig) throw new Error("the kubernetes store needs a kubeconfig");
  await checkCrds(kubeConfig, settings.servedGroup);
  const store = openKubernetesStore({
    ...kubernetesStoreOptions(kubeConfig, settings),
    ...(logger ? { logger } : {}),
  });
  // Every hub, leader or standby, lists and watches every kind from the start: a standby that
  // takes the lead starts its controllers on a full cache, and serves reads from it meanwhile.
  store.warm();
  return store;
}

/** The store of the hub that runs (or ran) on `dataDir`. */
export async function openStoreOfDataDir(dataDir: string): Promise<Store> {
  const text = await readFile(settingsFile(dataDir), "utf8").catch(() => undefined);
  const settings = text === undefined ? { backend: "sqlite" as const } : (JSON.parse(text) as StoreSettings);
  if (settings.backend === "sqlite") return openSqliteStore({ dataDir });
  // A one-shot reader (the CLI): a cache would list and watch a whole kind for one read.
  return openKubernetesStore({
    ...kubernetesStoreOptions(loadKubeConfig(settings.kubeconfig), settings),
    cache: false,
  });
}

function kubernetesStoreOptions(kubeConfig: KubeConfig, settings: KubernetesStoreSettings) {
  return {
    kubeConfig,
    resources: kinds.map(({ kind, plural, namespaced }) => ({ kind, plural, namespaced })),
    apiVersion: API_VERSION,
    ...(settings.servedGroup ? { servedGroup: settings.servedGroup } : {}),
  };
}

interface ServedCrd {
  spec?: {
    scope?: string;
    versions?: { name: string; served?: boolean; schema?: unknown; subresources?: unknown }[];
  };
  status?: { conditions?: { type: string; status: string }[] };
}

/** Every CRD installed, Established and the same as this version renders; else one clear error. */
export async function checkCrds(kubeConfig: KubeConfig, servedGroup?: string): Promise<void> {
  const http = new KubeHttp({ kubeConfig, maxSockets: 4 });
  const problems: string[] = [];
  try {
    for (const crd of customResourceDefinitions()) {
      const spec = crd.spec as {
        group: string;
        versions: { name: string; schema: unknown; subresources?: unknown }[];
      };
      const plural = (crd.metadata as { name: string }).name.split(".")[0]!;
      const name = `${plural}.${servedGroup ?? spec.group}`;
      let served: ServedCrd;
      try {
        served = await http.request<ServedCrd>(
          "GET",
          `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
        );
      } catch (error) {
        if (error instanceof KubeHttpError && error.code === 404) {
          problems.push(`${name} is not installed`);
          continue;
        }
        throw new Error(
          `reading CRD ${name} on ${http.server.origin}: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      const established = served.status?.conditions?.some(
        (c) => c.type === "Established" && c.status === "True",
      );
      if (!established) problems.push(`${name} is not Established`);
      const want = spec.versions[0]!;
      const have = served.spec?.versions?.find((v) => v.name === want.name);
      // Test installations (another group) carry schemas of their own; rlinf.io must match.
      if (!have) problems.push(`${name} does not serve version ${want.name}`);
      else if (!servedGroup && !deepEqual(have.schema, want.schema))
        problems.push(`${name} has another schema (an older rlark?)`);
      else if (want.subresources && !have.subresources) problems.push(`${name} has no status subresource`);
    }
  } finally {
    http.close();
  }
  if (problems.length > 0) {
    throw new Error(
      `the kubernetes store needs this version's CRDs on ${http.server.origin}: ${problems.join("; ")}. ` +
        "Install them with: rlark crds | kubectl apply --server-side -f -",
    );
  }
}
