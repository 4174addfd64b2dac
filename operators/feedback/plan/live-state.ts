// Where the plan's "before" comes from: the hub's store (in the hub), the hub's read-only HTTP API
// (`rlark plan --hub`), the manifests of a base revision (`rlark plan --base`), or nothing.
import {
  API_VERSION,
  kinds,
  MANAGED_BY_GIT,
  MANAGED_BY_LABEL,
  type ManifestObject,
} from "../../api/index.ts";
import type { KubeObject, Store } from "../../lib/store/index.ts";
import { manifestAsObject } from "./object-diff.ts";

/** Kinds the plan reads: everything git writes, and the reports placement and dry-run need. */
export const LIVE_KINDS = [...kinds.filter((k) => k.writtenBy === "git").map((k) => k.kind), "Task"].filter(
  (kind, i, all) => all.indexOf(kind) === i,
);

export async function liveFromStore(store: Store): Promise<KubeObject[]> {
  const lists = await Promise.all(LIVE_KINDS.map((kind) => store.list(kind)));
  return lists.flatMap((l) => l.items);
}

export interface HubApiOptions {
  /** http(s)://host:port of the hub. */
  hub: string;
  token: string;
  fetch?: typeof fetch;
}

/** Reads the live state through `GET /api/v1/rlinf.io/v1alpha1/{plural}`; the token is sent, never shown. */
export async function liveFromHub(options: HubApiOptions): Promise<KubeObject[]> {
  const get = options.fetch ?? fetch;
  const out: KubeObject[] = [];
  for (const kind of LIVE_KINDS) {
    const info = kinds.find((k) => k.kind === kind);
    if (!info) continue;
    const url = new URL(`/api/v1/${API_VERSION}/${info.plural}`, options.hub);
    const response = await get(url, {
      headers: { authorization: `Bearer ${options.token}`, accept: "application/json" },
    });
    if (!response.ok) {
      throw new Error(`GET ${url.pathname} on ${url.origin}: HTTP ${response.status}`);
    }
    const body = (await response.json()) as { items?: unknown };
    if (!Array.isArray(body.items)) throw new Error(`GET ${url.pathname}: not a list`);
    for (const item of body.items) {
      if (item && typeof item === "object" && "metadata" in item) out.push(item as KubeObject);
    }
  }
  return out;
}

/** The objects of a base revision as the hub would hold them after applying it. */
export function liveFromManifests(objects: readonly ManifestObject[]): KubeObject[] {
  return objects.map((m) => {
    const object = manifestAsObject(m);
    return {
      ...object,
      metadata: {
        ...object.metadata,
        labels: { ...object.metadata.labels, [MANAGED_BY_LABEL]: MANAGED_BY_GIT },
      },
    };
  });
}
