import type { AddonCatalog } from "../addon-catalog.ts";
import type { ParsedDocument } from "./parsed-document.ts";

/** A document that is an RLark object (apiVersion rlinf.io/v1alpha1 and a known kind). */
export interface ManifestObject {
  kind: string;
  name: string;
  namespace: string | undefined;
  object: Record<string, unknown>;
  document: ParsedDocument;
  /** False when the object failed its schema: rules then skip its fields but still see its name. */
  schemaValid: boolean;
}

/**
 * What is wrong with one sealed value for `context`, or undefined when it passes. `inspect` sees
 * the opened value when the check opens it (the hub's; CI's cannot) and must neither keep nor
 * show it.
 */
export type SealCheck = (
  sealed: string,
  context: string,
  inspect?: (plain: Buffer) => void,
) => string | undefined;

export interface RuleContext {
  readonly objects: readonly ManifestObject[];
  /** Schema-valid objects of a kind, in file order. */
  ofKind(kind: string): ManifestObject[];
  /** Every object of a kind by name, schema-valid or not (a reference to a broken object is not "missing"). */
  names(kind: string): Set<string>;
  readonly catalog: AddonCatalog;
  /** `<namespace>/<name>` → the version an Addon runs now (ValidateOptions.installedAddons). */
  readonly installedAddons: ReadonlyMap<string, string>;
  /** ValidateOptions.sealCheck. */
  readonly sealCheck?: SealCheck;
  report(target: ManifestObject, pointer: string, rule: string, message: string, at?: "value" | "key"): void;
}

/** A cross-object rule: reads the whole snapshot, reports through the context. */
export type CrossRule = (ctx: RuleContext) => void;

/**
 * A rule over whole kinds (the later of two overlapping Domains, a key on two Users). A hub that
 * keeps findings between revisions (CrossMemo) runs it again only when an object of a kind it
 * reads was added, removed or changed, or an option it uses is another one.
 */
export interface WholeRule {
  /** Every kind whose objects or names the rule reads. */
  reads: readonly string[];
  /** The options its findings depend on besides the objects, compared by identity between runs. */
  uses?: (ctx: RuleContext) => readonly unknown[];
  run: CrossRule;
}

/**
 * A rule about one object at a time (each schema-valid object of `kinds`), given the names of
 * other kinds: kept per object between revisions, run again for a changed object, and for every
 * object of `kinds` when one of the name sets it reads gained or lost a name.
 */
export interface ObjectRule {
  kinds: readonly string[];
  /** The kinds whose names (ctx.names) the check reads: its only view beyond the object. */
  names: readonly string[];
  check(object: ManifestObject, ctx: RuleContext): void;
}

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function objectAt(value: unknown, key: string): JsonObject | undefined {
  if (!isObject(value)) return undefined;
  const inner = value[key];
  return isObject(inner) ? inner : undefined;
}

export function arrayAt(value: unknown, key: string): unknown[] {
  if (!isObject(value)) return [];
  const inner = value[key];
  return Array.isArray(inner) ? inner : [];
}

export function stringAt(value: unknown, key: string): string | undefined {
  if (!isObject(value)) return undefined;
  const inner = value[key];
  return typeof inner === "string" ? inner : undefined;
}

/** Escapes one JSON-pointer segment (RFC 6901): label keys contain "/". */
export function escapePointer(segment: string): string {
  return segment.replaceAll("~", "~0").replaceAll("/", "~1");
}
