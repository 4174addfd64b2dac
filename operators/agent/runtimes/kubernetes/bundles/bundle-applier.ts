// Applies the Bundles the hub handed this cluster (docs/bundles.md): each object by server-side
// apply with field manager rlark-bundle (forced: the Bundle owns the fields its manifests set), in
// the Bundle's namespace; prunes what it applied and the Bundle no longer holds; removes a Bundle
// no longer desired. What it applied is recorded in an inventory ConfigMap per Bundle before
// anything is applied (addon-inventory.ts), and it deletes only objects that still carry the
// Bundle's label: an object it did not create is never applied over nor deleted.
//
// Between changes it looks for drift every driftIntervalMs: a server-side dry-run of each manifest
// against the live object (drift.ts). With selfHeal the drift is applied away at once and reported
// as corrected; without, it is reported (phase Drifted, the fields per object) and left.
import { createHash } from "node:crypto";
import {
  type CoreV1Api,
  type KubernetesObject,
  type KubernetesObjectApi,
  PatchStrategy,
} from "@kubernetes/client-node";
import { AGENT_INSTANCE_LABEL, BUNDLE_FIELD_MANAGER, BUNDLE_LABEL } from "../../../../api/index.ts";
import { type Clock, systemClock } from "../../../../lib/clock.ts";
import { ApplyLoop, type RunResult } from "../../../../lib/controller/loop/index.ts";
import type { Logger } from "../../../../lib/logger.ts";
import type { ObservedBundle, ObservedBundleObject, RuntimeBundle } from "../../types.ts";
import {
  type Inventory,
  type InventoryStore,
  inventoryStore,
  type ObjectRef,
} from "../addons/addon-inventory.ts";
import { apiErrorCode, describeApiError } from "../api-error.ts";
import { ensureNamespace } from "../namespace.ts";
import { bundleHealth } from "./bundle-health.ts";
import { driftedFields } from "./drift.ts";

export interface BundleApplierOptions {
  objects: KubernetesObjectApi;
  core: CoreV1Api;
  /** The agent's namespace: inventories live there. */
  namespace: string;
  /** See KubernetesRuntimeOptions.instance. */
  instance?: string | undefined;
  logger: Logger;
  onChange: () => void;
  /** How often an unsettled Bundle is looked at again, and a failed pass's first retry. Default 2 s. */
  pollIntervalMs?: number | undefined;
  /** How often a settled Bundle is checked for drift. Default 30 s. */
  driftIntervalMs?: number | undefined;
  /** An object's violations of the cluster's own OpenAPI schema (openapi/); [] when unknown. */
  checkSchema?: ((object: KubernetesObject) => Promise<string[]>) | undefined;
  clock?: Clock | undefined;
}

export const BUNDLE_INVENTORY_LABEL = "rlark.io/bundle-inventory";

type Live = KubernetesObject | undefined;

export class BundleApplier {
  readonly #options: BundleApplierOptions;
  readonly #inventories: InventoryStore;
  readonly #loop: ApplyLoop<readonly RuntimeBundle[]>;
  readonly #clock: Clock;
  #observed = new Map<string, ObservedBundle>();
  #inventoryNamespace = false;

  constructor(options: BundleApplierOptions) {
    this.#options = options;
    this.#inventories = inventoryStore({
      ...options,
      flavour: { prefix: "rlark-bundle-", label: BUNDLE_INVENTORY_LABEL, fieldManager: BUNDLE_FIELD_MANAGER },
    });
    this.#clock = options.clock ?? systemClock;
    this.#loop = new ApplyLoop({
      name: "bundle pass",
      run: (bundles) => this.#passOnce(bundles),
      baseMs: options.pollIntervalMs ?? 2000,
      logger: options.logger,
      describeError: (err) => describeApiError(err),
      clock: this.#clock,
    });
  }

  /** Resolves when a pass of `bundles` is over; a failed one is logged and tried again, not thrown. */
  apply(bundles: readonly RuntimeBundle[]): Promise<void> {
    return this.#loop.set(bundles).catch(() => undefined);
  }

  observe(): ObservedBundle[] {
    return [...this.#observed.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  async #passOnce(desired: readonly RuntimeBundle[]): Promise<RunResult | undefined> {
    if (!this.#inventoryNamespace && desired.length > 0) {
      await ensureNamespace(this.#options.core, this.#options.namespace);
      this.#inventoryNamespace = true;
    }
    const inventories = new Map((await this.#inventories.list()).map((i) => [i.name, i]));
    const next = new Map<string, ObservedBundle>();
    for (const bundle of desired) {
      const name = bundle.metadata.name;
      next.set(name, await this.#sync(bundle, inventories.get(name), this.#observed.get(name)));
    }
    for (const inventory of inventories.values()) {
      if (next.has(inventory.name)) continue;
      const removing = await this.#remove(inventory);
      if (removing) next.set(inventory.name, removing);
    }
    const changed = JSON.stringify([...next]) !== JSON.stringify([...this.#observed]);
    this.#observed = next;
    if (changed) this.#options.onChange();
    const settled = [...next.values()].every((o) => o.phase === "Ready" || o.phase === "Drifted");
    return {
      requeueAfter: settled
        ? (this.#options.driftIntervalMs ?? 30_000)
        : (this.#options.pollIntervalMs ?? 2000),
    };
  }

  async #sync(
    bundle: RuntimeBundle,
    inventory: Inventory | undefined,
    before: ObservedBundle | undefined,
  ): Promise<ObservedBundle> {
    const { name, generation } = bundle.metadata;
    const objects = bundle.spec.objects.map((o) => this.#labelled(o));
    const refs = objects.map(refOf);
    const digest = createHash("sha256").update(JSON.stringify(objects)).digest("hex");
    const changed = inventory?.digest !== digest;
    const base = {
      name,
      ...(generation === undefined ? {} : { generation }),
      ...(before?.drift ? { drift: before.drift } : {}),
    };
    const failed = (message: string, states: ObservedBundleObject[] = []): ObservedBundle => ({
      ...base,
      phase: "Failed",
      message,
      objects: states,
      ...(inventory?.version ? { revision: inventory.version } : {}),
    });
    try {
      await ensureNamespace(this.#options.core, bundle.spec.namespace);
      // Recorded first: whatever happens next, every object that may exist is in the inventory.
      if (changed) {
        await this.#inventories.write({
          name,
          objects: union(inventory?.objects ?? [], refs),
          digest: "",
          version: inventory?.version ?? "",
          generation: inventory?.generation ?? 0,
          prune: bundle.spec.prune,
        });
      }
    } catch (err) {
      return failed(describeApiError(err, "recording what the Bundle applies"));
    }

    // A changed Bundle is checked against the cluster's own schemas before anything is applied:
    // an object this cluster's API would refuse fails the release whole, naming object and field.
    if (changed && this.#options.checkSchema) {
      const refused: ObservedBundleObject[] = [];
      for (const object of objects) {
        const findings = await this.#options.checkSchema(object);
        if (findings.length > 0)
          refused.push({
            ...refOf(object),
            health: "Degraded",
            message:
              `${describe(refOf(object))} does not fit this cluster's schema: ${findings.join("; ")}`.slice(
                0,
                1024,
              ),
          });
      }
      if (refused.length > 0) return failed(refused[0]?.message ?? "", refused);
    }

    const states: ObservedBundleObject[] = [];
    const drifts: string[] = [];
    let firstError: string | undefined;
    for (const object of objects) {
      const ref = refOf(object);
      const state = (rest: Omit<ObservedBundleObject, "apiVersion" | "kind" | "name" | "namespace">) =>
        states.push({ ...ref, ...rest });
      let live: Live;
      try {
        live = await this.#read(ref);
      } catch (err) {
        firstError ??= describeApiError(err, `reading ${describe(ref)}`);
        state({ health: "Degraded", message: firstError });
        continue;
      }
      if (live && live.metadata?.labels?.[BUNDLE_LABEL] !== name) {
        const message = `${describe(ref)} exists and was not created by Bundle ${name}: left alone (remove or rename it)`;
        firstError ??= message;
        state({ health: "Degraded", message });
        continue;
      }
      let drifted: string[] = [];
      if (live && !changed) {
        try {
          drifted = driftedFields(live, await this.#apply(object, true));
        } catch (err) {
          firstError ??= describeApiError(err, `dry-run of ${describe(ref)}`);
          state({ health: "Degraded", message: firstError });
          continue;
        }
        if (drifted.length > 0) drifts.push(`${describe(ref)}: ${drifted.join(", ")}`);
      }
      const heal = drifted.length > 0 && bundle.spec.selfHeal;
      if (!live || changed || heal) {
        try {
          live = await this.#apply(object, false);
        } catch (err) {
          const message = describeApiError(err, `applying ${describe(ref)}`);
          firstError ??= message;
          state({ health: "Degraded", message });
          continue;
        }
      }
      const health = bundleHealth(live);
      state({ ...health, ...(drifted.length > 0 && !heal ? { drifted } : {}) });
    }
    const drift = drifts.length > 0 ? this.#drift(drifts, bundle.spec.selfHeal) : undefined;
    const withDrift = drift ? { ...base, drift } : inactive(base);
    if (firstError)
      return { ...failed(firstError, states), ...(withDrift.drift ? { drift: withDrift.drift } : {}) };

    if (changed) {
      const keep = new Set(refs.map(keyOf));
      for (const stale of inventory?.objects ?? []) {
        if (keep.has(keyOf(stale)) || !bundle.spec.prune) continue;
        if (!(await this.#delete(stale, name))) return failed(`could not prune ${describe(stale)}`, states);
      }
      await this.#inventories.write({
        name,
        objects: refs,
        digest,
        version: bundle.spec.revision,
        generation: generation ?? 0,
        prune: bundle.spec.prune,
      });
    }
    const revision = changed ? bundle.spec.revision : (inventory?.version ?? bundle.spec.revision);
    const progressing = states.filter((s) => s.health !== "Healthy");
    const phase = drift && !drift.corrected ? "Drifted" : progressing.length > 0 ? "Progressing" : "Ready";
    const message =
      phase === "Drifted"
        ? drift?.message
        : progressing.length > 0
          ? `not ready: ${progressing.map((s) => s.message ?? `${s.kind} ${s.name}`).join("; ")}`
          : undefined;
    return { ...withDrift, phase, revision, objects: states, ...(message ? { message } : {}) };
  }

  #drift(drifts: string[], corrected: boolean): NonNullable<ObservedBundle["drift"]> {
    const what = drifts.slice(0, 5).join("; ") + (drifts.length > 5 ? ` and ${drifts.length - 5} more` : "");
    const at = new Date(this.#clock.now()).toISOString();
    const message = corrected
      ? `drift corrected: ${what}`
      : `drifted from git (not corrected: the hub runs with --no-self-heal): ${what}`;
    this.#options.logger.warn(corrected ? "bundle drift corrected" : "bundle drift", { drift: what });
    return { message, at, corrected, active: !corrected };
  }

  /** Deletes what the inventory lists, last first, when the Bundle prunes; it goes once all of it is gone. */
  async #remove(inventory: Inventory): Promise<ObservedBundle | undefined> {
    const waiting: string[] = [];
    if (inventory.prune !== false) {
      for (const ref of [...inventory.objects].reverse()) {
        if (!(await this.#delete(ref, inventory.name))) waiting.push(describe(ref));
      }
      for (const ref of inventory.objects) {
        if (waiting.includes(describe(ref))) continue;
        const live = await this.#read(ref).catch(() => undefined);
        if (live?.metadata?.labels?.[BUNDLE_LABEL] === inventory.name) waiting.push(describe(ref));
      }
    }
    if (waiting.length === 0) {
      await this.#inventories.remove(inventory.name);
      return undefined;
    }
    return {
      name: inventory.name,
      phase: "Removing",
      ...(inventory.version ? { revision: inventory.version } : {}),
      message: `waiting for ${waiting.slice(0, 5).join(", ")}${waiting.length > 5 ? ` and ${waiting.length - 5} more` : ""} to go`,
      objects: [],
    };
  }

  async #read(ref: ObjectRef): Promise<Live> {
    try {
      return await this.#options.objects.read(header(ref));
    } catch (err) {
      if (apiErrorCode(err) === 404) return undefined;
      throw err;
    }
  }

  #apply(object: KubernetesObject, dryRun: boolean): Promise<KubernetesObject> {
    return this.#options.objects.patch(
      object,
      undefined,
      dryRun ? "All" : undefined,
      BUNDLE_FIELD_MANAGER,
      true,
      PatchStrategy.ServerSideApply,
    );
  }

  /** True when the object is gone or going, or is not the Bundle's (then it is left alone). */
  async #delete(ref: ObjectRef, bundle: string): Promise<boolean> {
    try {
      const live = await this.#read(ref);
      if (live?.metadata?.labels?.[BUNDLE_LABEL] !== bundle) return true;
      await this.#options.objects.delete(
        header(ref),
        undefined,
        undefined,
        undefined,
        undefined,
        "Background",
      );
      return true;
    } catch (err) {
      if (apiErrorCode(err) === 404) return true;
      this.#options.logger.warn("bundle object not deleted", {
        object: describe(ref),
        error: describeApiError(err),
      });
      return false;
    }
  }

  /** An instance's objects carry its label, so a test's runtime on a shared cluster finds only its own. */
  #labelled(object: Record<string, unknown>): KubernetesObject {
    const copy = structuredClone(object) as KubernetesObject;
    const instance = this.#options.instance;
    if (instance && copy.metadata)
      copy.metadata.labels = { ...copy.metadata.labels, [AGENT_INSTANCE_LABEL]: instance };
    return copy;
  }
}

/** The last drift stays reported, as no longer active, once the objects match git again. */
function inactive<T extends { drift?: ObservedBundle["drift"] }>(base: T): T {
  return base.drift ? { ...base, drift: { ...base.drift, active: false } } : base;
}

function refOf(object: KubernetesObject): ObjectRef {
  return {
    apiVersion: object.apiVersion ?? "",
    kind: object.kind ?? "",
    name: object.metadata?.name ?? "",
    ...(object.metadata?.namespace ? { namespace: object.metadata.namespace } : {}),
  };
}

function header(ref: ObjectRef): KubernetesObject & { metadata: { name: string } } {
  return {
    apiVersion: ref.apiVersion,
    kind: ref.kind,
    metadata: { name: ref.name, ...(ref.namespace ? { namespace: ref.namespace } : {}) },
  };
}

function keyOf(ref: ObjectRef): string {
  return `${ref.kind}/${ref.namespace ?? ""}/${ref.name}`;
}

function describe(ref: ObjectRef): string {
  return `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ""}${ref.name}`;
}

function union(a: readonly ObjectRef[], b: readonly ObjectRef[]): ObjectRef[] {
  const seen = new Set(a.map(keyOf));
  return [...a, ...b.filter((r) => !seen.has(keyOf(r)))];
}
