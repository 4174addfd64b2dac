// The cluster's own OpenAPI v3 schemas of the kinds a Bundle may hold, fetched by the agent with
// its own credentials (GET /openapi/v3, then the group-version documents it names, readable by
// every authenticated identity) and cached per Kubernetes version: the documents change only with
// the control plane. Bounded: only the Bundle kinds' group-versions are fetched (KubeHttp caps each
// answer), only the schemas those kinds reach are kept, and only the newest two versions. A
// cluster that does not serve them (an old one, a proxy refusing, RBAC) is checked against the hub's
// bundled schemas only, as before; the failure is logged once and tried again after RETRY_MS.
import { type Clock, systemClock } from "../../../../lib/clock.ts";
import type { KubeHttp } from "../../../../lib/kube-http.ts";
import type { Logger } from "../../../../lib/logger.ts";
import { BUNDLE_DRY_RUN_KINDS } from "../../../../lib/tunnel/index.ts";
import { checkAgainstOpenApi, reachableSchemas, type Schemas, schemaNameOf } from "./openapi-check.ts";

const TIMEOUT_MS = 30_000;
const RETRY_MS = 5 * 60_000;
const VERSIONS_KEPT = 2;

interface GroupSchemas {
  /** Kind → its schema's name. */
  roots: Map<string, string>;
  schemas: Schemas;
}

interface Entry<T = GroupSchemas | undefined> {
  value: Promise<T>;
  /** Set when the fetch failed: retried after RETRY_MS. */
  failedAt?: number;
}

type Paths = Record<string, string> | undefined;

export interface ClusterOpenApiOptions {
  http: Pick<KubeHttp, "request">;
  /** The API server's gitVersion now; undefined until known (then nothing is checked). */
  version: () => string | undefined;
  logger: Logger;
  clock?: Clock;
}

/** `apps/v1` → `apis/apps/v1`, `v1` → `api/v1`: the keys of /openapi/v3's paths. */
function pathOf(apiVersion: string): string {
  return apiVersion.includes("/") ? `apis/${apiVersion}` : `api/${apiVersion}`;
}

export class ClusterOpenApi {
  readonly #options: ClusterOpenApiOptions;
  readonly #clock: Clock;
  /** Version → group-version path → its schemas (insertion order: oldest version first). */
  readonly #cache = new Map<string, Map<string, Entry>>();
  readonly #index = new Map<string, Entry<Paths>>();

  constructor(options: ClusterOpenApiOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
  }

  /** Violations of the object's kind's schema on this cluster, `/pointer: message (…, v1.34.4)`; [] when unknown. */
  async check(object: Record<string, unknown>): Promise<string[]> {
    const version = this.#options.version();
    const apiVersion = object.apiVersion;
    const kind = object.kind;
    if (!version || typeof apiVersion !== "string" || typeof kind !== "string") return [];
    if (!BUNDLE_DRY_RUN_KINDS[apiVersion]?.includes(kind)) return [];
    const group = await this.#group(version, apiVersion);
    const root = group?.roots.get(kind);
    if (!group || !root) return [];
    return checkAgainstOpenApi(object, root, group.schemas).map(
      (finding) => `${finding} (the cluster's OpenAPI, ${version})`,
    );
  }

  /** Group-versions cached, as `<version> <path>`: for tests and diagnostics. */
  cached(): string[] {
    return [...this.#cache].flatMap(([version, groups]) => [...groups.keys()].map((p) => `${version} ${p}`));
  }

  #group(version: string, apiVersion: string): Promise<GroupSchemas | undefined> {
    let groups = this.#cache.get(version);
    if (!groups) {
      groups = new Map();
      this.#cache.set(version, groups);
      while (this.#cache.size > VERSIONS_KEPT) {
        const oldest = this.#cache.keys().next().value as string;
        this.#cache.delete(oldest);
        this.#index.delete(oldest);
      }
    }
    const path = pathOf(apiVersion);
    const entry = groups.get(path);
    if (entry && !(entry.failedAt !== undefined && this.#clock.now() - entry.failedAt > RETRY_MS))
      return entry.value;
    const fresh: Entry = { value: Promise.resolve(undefined) };
    fresh.value = this.#fetchGroup(version, apiVersion, path).catch((error: unknown) => {
      fresh.failedAt = this.#clock.now();
      this.#options.logger.warn("the cluster's OpenAPI schemas could not be read; the bundled ones stand", {
        path: `/openapi/v3/${path}`,
        error: error instanceof Error ? error.message : String(error),
      });
      return undefined;
    });
    groups.set(path, fresh);
    return fresh.value;
  }

  async #paths(version: string): Promise<Paths> {
    const entry = this.#index.get(version);
    if (entry && !(entry.failedAt !== undefined && this.#clock.now() - entry.failedAt > RETRY_MS))
      return entry.value;
    const fresh: Entry<Paths> = { value: Promise.resolve(undefined) };
    fresh.value = this.#options.http
      .request<{ paths?: Record<string, { serverRelativeURL?: string }> }>("GET", "/openapi/v3", {
        timeoutMs: TIMEOUT_MS,
      })
      .then((index) =>
        Object.fromEntries(
          Object.entries(index.paths ?? {}).flatMap(([key, value]) =>
            typeof value?.serverRelativeURL === "string" ? [[key, value.serverRelativeURL]] : [],
          ),
        ),
      )
      .catch((error: unknown) => {
        fresh.failedAt = this.#clock.now();
        throw error;
      });
    this.#index.set(version, fresh);
    return fresh.value;
  }

  async #fetchGroup(version: string, apiVersion: string, path: string): Promise<GroupSchemas | undefined> {
    const relative = (await this.#paths(version))?.[path];
    if (!relative) return undefined;
    const url = new URL(relative, "http://api-server");
    const document = await this.#options.http.request<{ components?: { schemas?: Schemas } }>(
      "GET",
      url.pathname,
      { query: Object.fromEntries(url.searchParams), timeoutMs: TIMEOUT_MS },
    );
    const all = document.components?.schemas ?? {};
    const [group, groupVersion] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
    const roots = new Map<string, string>();
    for (const kind of BUNDLE_DRY_RUN_KINDS[apiVersion] ?? []) {
      const name = schemaNameOf(all, group ?? "", groupVersion ?? "", kind);
      if (name) roots.set(kind, name);
    }
    return { roots, schemas: reachableSchemas([...roots.values()], all) };
  }
}
