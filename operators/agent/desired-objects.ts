// What the agent takes from the hub: Tasks, DomainPeers, Node overlays, AddonReleases (Addons
// the hub rendered for this cluster) and Secrets (opened from SealedSecrets), each checked
// against its kind's schema where it crosses the tunnel (every object crossing a process boundary
// is validated there). A refused object is logged naming the object and the field; the agent keeps
// what it held for that object before, so a bad update disturbs nothing already running.
import {
  type AddonRelease,
  type BundleRelease,
  checkSchema,
  type DomainPeer,
  type Node,
  type Task,
} from "../api/index.ts";
import { type KubeObject, kindKey, kindKeyOf, type ObjectRef } from "../lib/kube-object.ts";
import type { Logger } from "../lib/logger.ts";
import { type DesiredSecret, secretRefusal } from "./desired-secret.ts";

export type DesiredObject = Task | DomainPeer | Node | AddonRelease | BundleRelease | DesiredSecret;

const DESIRED_KINDS: ReadonlySet<string> = new Set([
  "Task",
  "DomainPeer",
  "Node",
  "AddonRelease",
  "BundleRelease",
]);

/** The first problem that makes the agent refuse `object`, as the field and what is wrong with it. */
export function refusal(object: KubeObject): { field: string; problem: string } | undefined {
  if (object.kind === "Secret" && object.apiVersion === "v1") return secretRefusal(object);
  if (!DESIRED_KINDS.has(object.kind))
    return { field: "/kind", problem: `${object.kind} is not a kind the agent takes from the hub` };
  const [first] = checkSchema(object);
  return first ? { field: first.path || "/", problem: first.message } : undefined;
}

/** The objects the hub wants on this cluster, by kind/namespace/name: only ones that passed. */
export class DesiredObjects {
  #objects = new Map<string, DesiredObject>();
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** A snapshot: the whole set is replaced. */
  replace(objects: readonly KubeObject[]): void {
    const next = new Map<string, DesiredObject>();
    for (const object of objects) this.#take(next, object);
    this.#objects = next;
  }

  /** A delta: removals, then upserts. */
  update(upserts: readonly KubeObject[], deletes: readonly ObjectRef[]): void {
    for (const ref of deletes) this.#objects.delete(kindKey(ref.kind, ref.namespace, ref.name));
    for (const object of upserts) this.#take(this.#objects, object);
  }

  all(): DesiredObject[] {
    return [...this.#objects.values()];
  }

  tasks(): Task[] {
    return this.all().filter((o): o is Task => o.kind === "Task");
  }

  domainPeers(): DomainPeer[] {
    return this.all().filter((o): o is DomainPeer => o.kind === "DomainPeer");
  }

  nodes(): Node[] {
    return this.all().filter((o): o is Node => o.kind === "Node");
  }

  addons(): AddonRelease[] {
    return this.all().filter((o): o is AddonRelease => o.kind === "AddonRelease");
  }

  bundles(): BundleRelease[] {
    return this.all().filter((o): o is BundleRelease => o.kind === "BundleRelease");
  }

  secrets(): DesiredSecret[] {
    return this.all().filter((o): o is DesiredSecret => o.kind === "Secret");
  }

  #take(into: Map<string, DesiredObject>, object: KubeObject): void {
    const key = kindKeyOf(object);
    const refused = refusal(object);
    if (!refused) {
      // Checked against the kind's schema just above.
      into.set(key, object as DesiredObject);
      return;
    }
    const held = this.#objects.get(key);
    if (held) into.set(key, held);
    this.#logger.error("refused an object from the hub that fails its schema", {
      kind: object.kind,
      ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}),
      name: object.metadata.name,
      ...refused,
      ...(held ? { kept: "the version held before" } : {}),
    });
  }
}
