// Installs the Addons the hub rendered for this cluster (docs/addons.md): server-side applies each
// one's objects in order with field manager rlark-addon, prunes what an earlier version applied and
// this one no longer renders, uninstalls an Addon no longer desired, and follows the rollout of
// its DaemonSets, Deployments and StatefulSets for its phase. What is installed is recorded in an
// inventory ConfigMap per Addon (addon-inventory.ts) before anything is applied, so no object is
// lost track of when the agent stops half-way. One pass at a time (lib/controller's ApplyLoop);
// while anything is not settled, passes repeat every pollIntervalMs; a pass that failed is tried
// again with backoff.
import { createHash } from "node:crypto";
import {
  type CoreV1Api,
  type KubernetesObject,
  type KubernetesObjectApi,
  PatchStrategy,
} from "@kubernetes/client-node";
import { ADDON_FIELD_MANAGER, AGENT_INSTANCE_LABEL, compareVersions } from "../../../../api/index.ts";
import { type Clock, systemClock } from "../../../../lib/clock.ts";
import { ApplyLoop, type RunResult } from "../../../../lib/controller/loop/index.ts";
import type { Logger } from "../../../../lib/logger.ts";
import type { ObservedAddon, RuntimeAddon } from "../../types.ts";
import { apiErrorCode, describeApiError } from "../api-error.ts";
import { ensureNamespace } from "../namespace.ts";
import { type Inventory, type InventoryStore, inventoryStore, type ObjectRef } from "./addon-inventory.ts";
import { ROLLOUT_KINDS, rolloutProblem } from "./addon-rollout.ts";

export interface AddonInstallerOptions {
  objects: KubernetesObjectApi;
  core: CoreV1Api;
  /** The agent's namespace: inventories live there. */
  namespace: string;
  /** See KubernetesRuntimeOptions.instance. */
  instance?: string | undefined;
  logger: Logger;
  /** The API server's gitVersion, for minKubernetesVersion. */
  kubernetesVersion: () => string | undefined;
  onChange: () => void;
  /** How often an unsettled Addon is looked at again, and a failed pass's first retry. Default 2 s. */
  pollIntervalMs?: number | undefined;
  clock?: Clock | undefined;
}

/** An unchanged Addon is applied again after this long anyway, to undo drift made behind our back. */
const REAPPLY_AFTER_MS = 5 * 60_000;

export class AddonInstaller {
  readonly #options: AddonInstallerOptions;
  readonly #inventories: InventoryStore;
  readonly #loop: ApplyLoop<readonly RuntimeAddon[]>;
  readonly #clock: Clock;
  #observed = new Map<string, ObservedAddon>();
  /** When each Addon's current objects were last applied in full. */
  #appliedAt = new Map<string, number>();
  #inventoryNamespace = false;

  constructor(options: AddonInstallerOptions) {
    this.#options = options;
    this.#inventories = inventoryStore(options);
    this.#clock = options.clock ?? systemClock;
    this.#loop = new ApplyLoop({
      name: "addon pass",
      run: (addons) => this.#passOnce(addons),
      baseMs: options.pollIntervalMs ?? 2000,
      logger: options.logger,
      describeError: (err) => describeApiError(err),
      clock: this.#clock,
    });
  }

  /** Resolves when a pass of `addons` is over; a failed one is logged and tried again, not thrown. */
  apply(addons: readonly RuntimeAddon[]): Promise<void> {
    return this.#loop.set(addons).catch(() => undefined);
  }

  observe(): ObservedAddon[] {
    return [...this.#observed.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  async #passOnce(desired: readonly RuntimeAddon[]): Promise<RunResult | undefined> {
    if (!this.#inventoryNamespace && desired.length > 0) {
      await ensureNamespace(this.#options.core, this.#options.namespace);
      this.#inventoryNamespace = true;
    }
    const inventories = new Map((await this.#inventories.list()).map((i) => [i.name, i]));
    const next = new Map<string, ObservedAddon>();
    for (const addon of desired) {
      next.set(addon.metadata.name, await this.#install(addon, inventories.get(addon.metadata.name)));
    }
    for (const inventory of inventories.values()) {
      if (next.has(inventory.name)) continue;
      const uninstalling = await this.#uninstall(inventory);
      if (uninstalling) next.set(inventory.name, uninstalling);
    }
    const changed = JSON.stringify([...next]) !== JSON.stringify([...this.#observed]);
    this.#observed = next;
    if (changed) this.#options.onChange();
    if ([...next.values()].some((o) => o.phase !== "Ready"))
      return { requeueAfter: this.#options.pollIntervalMs ?? 2000 };
    return undefined;
  }

  async #install(addon: RuntimeAddon, inventory: Inventory | undefined): Promise<ObservedAddon> {
    const { name, generation } = addon.metadata;
    const base = { name, ...(generation === undefined ? {} : { generation }) };
    const failed = (message: string): ObservedAddon => ({
      ...base,
      phase: "Failed",
      message,
      ...(inventory?.version ? { version: inventory.version } : {}),
    });
    const required = addon.spec.minKubernetesVersion;
    const running = this.#options.kubernetesVersion();
    if (required) {
      if (!running)
        return failed(`needs Kubernetes ${required} or later; the cluster's version is not known yet`);
      if (compareVersions(minorOf(running), required) < 0)
        return failed(`needs Kubernetes ${required} or later; this cluster runs ${running}`);
    }
    const objects = addon.spec.objects.map((o) => this.#labelled(o));
    const digest = createHash("sha256").update(JSON.stringify(objects)).digest("hex");
    const current = inventory?.digest === digest && inventory.generation === (generation ?? 0);
    const appliedAt = this.#appliedAt.get(name);
    let rolling = inventory?.rolling;
    if (!current || appliedAt === undefined || this.#clock.now() - appliedAt > REAPPLY_AFTER_MS) {
      const refs = objects.map(refOf);
      if (!current)
        rolling = inventory && inventory.digest !== digest ? "Upgrading" : (rolling ?? "Installing");
      try {
        await ensureNamespace(this.#options.core, addon.spec.namespace);
        // Recorded first: whatever happens next, every object that may exist is in the inventory.
        await this.#inventories.write({
          name,
          objects: union(inventory?.objects ?? [], refs),
          digest: "",
          version: inventory?.version ?? addon.spec.version,
          generation: inventory?.generation ?? 0,
          ...(rolling ? { rolling } : {}),
        });
      } catch (err) {
        return failed(describeApiError(err, "recording what the Addon installs"));
      }
      for (const object of objects) {
        try {
          await this.#options.objects.patch(
            object,
            undefined,
            undefined,
            ADDON_FIELD_MANAGER,
            true,
            PatchStrategy.ServerSideApply,
          );
        } catch (err) {
          return failed(describeApiError(err, `applying ${describe(refOf(object))}`));
        }
      }
      const keep = new Set(refs.map(keyOf));
      for (const stale of inventory?.objects ?? []) {
        if (keep.has(keyOf(stale))) continue;
        if (!(await this.#delete(stale))) return failed(`could not prune ${describe(stale)}`);
      }
      await this.#inventories.write({
        name,
        objects: refs,
        digest,
        version: addon.spec.version,
        generation: generation ?? 0,
        ...(rolling ? { rolling } : {}),
      });
      this.#appliedAt.set(name, this.#clock.now());
      // A change was just applied: the workload controllers have not looked at it yet. Say so
      // once (the next pass reads the rollout) rather than trust a status from before the change.
      if (!current) {
        return {
          ...base,
          phase: rolling ?? "Installing",
          version: addon.spec.version,
          message: "applied; waiting for the rollout",
        };
      }
    }
    const problems: string[] = [];
    for (const object of objects) {
      if (!ROLLOUT_KINDS.has(object.kind ?? "")) continue;
      try {
        const live = await this.#options.objects.read(header(refOf(object)));
        const problem = rolloutProblem(live);
        if (problem) problems.push(problem);
      } catch (err) {
        problems.push(describeApiError(err, describe(refOf(object))));
      }
    }
    if (problems.length > 0) {
      return {
        ...base,
        phase: rolling ?? "Installing",
        version: addon.spec.version,
        message: `not ready: ${problems.join("; ")}`,
      };
    }
    if (rolling) {
      await this.#inventories.write({
        name,
        objects: objects.map(refOf),
        digest,
        version: addon.spec.version,
        generation: generation ?? 0,
      });
    }
    return { ...base, phase: "Ready", version: addon.spec.version };
  }

  /** Deletes what the inventory lists, last first; the inventory goes once all of it is gone. */
  async #uninstall(inventory: Inventory): Promise<ObservedAddon | undefined> {
    const waiting: string[] = [];
    for (const ref of [...inventory.objects].reverse()) {
      if (!(await this.#delete(ref))) waiting.push(describe(ref));
    }
    for (const ref of inventory.objects) {
      if (waiting.includes(describe(ref))) continue;
      try {
        await this.#options.objects.read(header(ref));
        waiting.push(describe(ref));
      } catch (err) {
        if (apiErrorCode(err) !== 404) waiting.push(describe(ref));
      }
    }
    if (waiting.length === 0) {
      await this.#inventories.remove(inventory.name);
      this.#appliedAt.delete(inventory.name);
      return undefined;
    }
    return {
      name: inventory.name,
      phase: "Uninstalling",
      version: inventory.version,
      message: `waiting for ${waiting.slice(0, 5).join(", ")}${waiting.length > 5 ? ` and ${waiting.length - 5} more` : ""} to go`,
    };
  }

  /** True when the object is gone or going. */
  async #delete(ref: ObjectRef): Promise<boolean> {
    try {
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
      this.#options.logger.warn("addon object not deleted", {
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

/** "v1.34.4+k3s1" → "1.34". */
function minorOf(gitVersion: string): string {
  return gitVersion.replace(/^v/, "").split(".").slice(0, 2).join(".");
}

function refOf(object: KubernetesObject): ObjectRef {
  return {
    apiVersion: object.apiVersion ?? "",
    kind: object.kind ?? "",
    name: object.metadata?.name ?? "",
    ...(object.metadata?.namespace ? { namespace: object.metadata.namespace } : {}),
  };
}

/** What the object API needs to find an object. */
function header(ref: ObjectRef): KubernetesObject & { metadata: { name: string } } {
  return {
    apiVersion: ref.apiVersion,
    kind: ref.kind,
    metadata: { name: ref.name, ...(ref.namespace ? { namespace: ref.namespace } : {}) },
  };
}

/** Without the API version: an object moving from v1beta1 to v1 is the same object, not pruned. */
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
