// The cross-object rules of a snapshot, run over what changed since the last snapshot the same
// memo saw: the hub validates each revision of a repository of 100,000 Jobs after the first at the
// cost of the objects that changed, not of the repository. It keeps, between runs, every kind's
// objects and names, the holders of each name (unique names), each object rule's findings per
// object and each whole rule's findings; a run updates them from the objects added and removed
// (an object of a file that changed is a new object) and runs again only what those can change:
//   - an object rule, for the added objects of its kinds, and for every object of its kinds when a
//     name set it reads gained or lost a name (a Domain deleted: every Job's reference again);
//   - a whole rule, when an object of a kind it reads was added or removed, or an option it uses
//     (catalog, installed versions, seal check) is another object than last time;
//   - the unique-name check, for the names of the objects added and removed.
// The findings are those a whole run gives (tests/source/incremental-validate.test.ts compares them
// over random edits). The objects must be those of the SnapshotChecker's CheckMemo: an unchanged
// document's object is the same object from one run to the next, and a file's documents are kept
// or checked again together.
import {
  checkUniqueNames,
  compareFileOrder,
  type Diagnose,
  OBJECT_RULES,
  runCrossRules,
  uniqueNameKey,
  WHOLE_RULES,
} from "./cross-rules.ts";
import type { Diagnostic } from "./diagnostic.ts";
import type { ManifestObject, ObjectRule, RuleContext, WholeRule } from "./rule-context.ts";

/** The options the rules read besides the objects. */
export type RuleOptions = Pick<RuleContext, "catalog" | "installedAddons" | "sealCheck">;

interface KindState {
  members: Set<ManifestObject>;
  /** The schema-valid members in file order, made when a rule asks (dropped when members change). */
  valid: ManifestObject[] | undefined;
  /** How many members hold each name (a duplicate is two). */
  counts: Map<string, number>;
  names: Set<string>;
}

const NO_NAMES: Set<string> = new Set();

/**
 * What changed since the last run, as the SnapshotChecker saw it: the objects it checked (their
 * documents were new) and the files whose objects it took from the CheckMemo (their documents, so
 * their objects, are those of the last run: a kept parse is kept whole).
 */
export interface RunDelta {
  fresh: readonly ManifestObject[];
  /** Each file whose objects were kept, with the first of them. */
  keptFiles: ReadonlyMap<string, ManifestObject>;
}

export class CrossMemo {
  /** The objects of the last run, by file; undefined before a first run that finished. */
  #byFile: Map<string, ManifestObject[]> | undefined;
  /** A run began and has not finished: if another begins, what is kept may not match the documents. */
  #open = false;
  #kinds = new Map<string, KindState>();
  /** Per unique-name key, the objects holding it in file order. */
  #holders = new Map<string, ManifestObject[]>();
  /** Per key held more than once: what is said of the later holders. */
  #duplicates = new Map<string, Diagnostic[]>();
  #whole = new Map<WholeRule, { uses: readonly unknown[]; findings: Diagnostic[] }>();
  /** Per object rule, the objects it found something about. */
  #perObject = new Map<ObjectRule, Map<ManifestObject, Diagnostic[]>>();

  /**
   * The findings of every cross-object rule over `objects` (in file order), as a whole run over
   * them gives. If a rule throws, everything kept is dropped (the next run starts over) and the
   * error goes on.
   */
  check(
    objects: readonly ManifestObject[],
    delta: RunDelta,
    options: RuleOptions,
    diagnose: Diagnose,
  ): Diagnostic[] {
    try {
      const findings = this.#check(objects, delta, options, diagnose);
      this.#open = false;
      return findings;
    } catch (error) {
      this.#reset();
      throw error;
    }
  }

  /** A run begins (SnapshotChecker's constructor). One that never finished drops what is kept. */
  begin(): void {
    if (this.#open) this.#reset();
    this.#open = true;
  }

  #reset(): void {
    this.#byFile = undefined;
    this.#kinds = new Map();
    this.#holders = new Map();
    this.#duplicates = new Map();
    this.#whole = new Map();
    this.#perObject = new Map();
  }

  #check(
    objects: readonly ManifestObject[],
    delta: RunDelta,
    options: RuleOptions,
    diagnose: Diagnose,
  ): Diagnostic[] {
    // Per file, not per object: a file kept whole holds the same objects as at the last run.
    let added: readonly ManifestObject[] = delta.fresh;
    const removed: ManifestObject[] = [];
    let byFile = this.#byFile;
    // A kept file must hold what the last run held of it (the caller's cache follows the runs);
    // if not, start over rather than trust the rest.
    for (const [file, first] of delta.keptFiles) {
      if (byFile && byFile.get(file)?.[0] !== first) {
        this.#reset();
        byFile = undefined;
      }
    }
    if (!byFile) {
      byFile = new Map();
      added = objects;
    } else {
      for (const [file, held] of byFile) {
        if (delta.keptFiles.has(file)) continue;
        removed.push(...held);
        byFile.delete(file);
      }
    }
    for (const object of added) {
      const held = byFile.get(object.document.file);
      if (held) held.push(object);
      else byFile.set(object.document.file, [object]);
    }
    this.#byFile = byFile;

    const changedKinds = new Set<string>();
    const touchedNames = new Set<string>();
    // Whether each name added or removed was in its kind's name set before: compared after.
    const heldBefore = new Map<string, { kind: string; name: string; held: boolean }>();
    for (const { kind, name } of [...removed, ...added]) {
      const key = `${kind}\0${name}`;
      if (!heldBefore.has(key))
        heldBefore.set(key, { kind, name, held: this.#kinds.get(kind)?.names.has(name) ?? false });
    }
    for (const object of removed) this.#remove(object, changedKinds, touchedNames);
    for (const object of added) this.#add(object, changedKinds, touchedNames);
    /** Kinds whose name set gained or lost a name. */
    const renamedKinds = new Set<string>();
    for (const { kind, name, held } of heldBefore.values()) {
      if ((this.#kinds.get(kind)?.names.has(name) ?? false) !== held) renamedKinds.add(kind);
    }

    const findings: Diagnostic[] = [];
    const context = (report: RuleContext["report"]): RuleContext => ({
      objects,
      ofKind: (kind) => this.#valid(kind),
      names: (kind) => this.#kinds.get(kind)?.names ?? NO_NAMES,
      catalog: options.catalog,
      installedAddons: options.installedAddons,
      ...(options.sealCheck ? { sealCheck: options.sealCheck } : {}),
      report,
    });
    const collect =
      (into: Diagnostic[]): RuleContext["report"] =>
      (target, pointer, rule, message, at) =>
        into.push(diagnose(target, pointer, rule, message, at));

    for (const key of touchedNames) {
      const holders = this.#holders.get(key);
      if (!holders || holders.length < 2) {
        this.#duplicates.delete(key);
        continue;
      }
      const said: Diagnostic[] = [];
      checkUniqueNames(holders, collect(said));
      this.#duplicates.set(key, said);
    }
    for (const said of this.#duplicates.values()) findings.push(...said);

    for (const rule of OBJECT_RULES) {
      let kept = this.#perObject.get(rule);
      const again = !kept || rule.names.some((kind) => renamedKinds.has(kind));
      // One context per rule, its findings gathered per object: a Domain deleted runs the rule
      // over every Job.
      let said: Diagnostic[] = [];
      const ctx = context((target, pointer, id, message, at) =>
        said.push(diagnose(target, pointer, id, message, at)),
      );
      const run = (object: ManifestObject, into: Map<ManifestObject, Diagnostic[]>) => {
        said = [];
        rule.check(object, ctx);
        if (said.length > 0) into.set(object, said);
      };
      if (again || !kept) {
        kept = new Map();
        for (const kind of rule.kinds) for (const object of this.#valid(kind)) run(object, kept);
        this.#perObject.set(rule, kept);
      } else {
        for (const object of removed) kept.delete(object);
        for (const object of added) {
          if (object.schemaValid && rule.kinds.includes(object.kind)) run(object, kept);
        }
      }
      for (const said of kept.values()) findings.push(...said);
    }

    for (const rule of WHOLE_RULES) {
      const uses = rule.uses?.(context(() => {})) ?? [];
      const before = this.#whole.get(rule);
      const same =
        before !== undefined &&
        !rule.reads.some((kind) => changedKinds.has(kind)) &&
        before.uses.length === uses.length &&
        before.uses.every((value, i) => value === uses[i]);
      if (!same) {
        const said: Diagnostic[] = [];
        rule.run(context(collect(said)));
        this.#whole.set(rule, { uses, findings: said });
      }
      findings.push(...(this.#whole.get(rule)?.findings ?? []));
    }
    return findings;
  }

  #kind(kind: string): KindState {
    let state = this.#kinds.get(kind);
    if (!state) {
      state = { members: new Set(), valid: undefined, counts: new Map(), names: new Set() };
      this.#kinds.set(kind, state);
    }
    return state;
  }

  #valid(kind: string): ManifestObject[] {
    const state = this.#kinds.get(kind);
    if (!state) return [];
    state.valid ??= [...state.members].filter((o) => o.schemaValid).sort(compareFileOrder);
    return state.valid;
  }

  #remove(object: ManifestObject, changedKinds: Set<string>, touchedNames: Set<string>): void {
    const state = this.#kind(object.kind);
    state.members.delete(object);
    state.valid = undefined;
    changedKinds.add(object.kind);
    const count = (state.counts.get(object.name) ?? 0) - 1;
    if (count > 0) state.counts.set(object.name, count);
    else {
      state.counts.delete(object.name);
      state.names.delete(object.name);
    }
    if (!object.name) return;
    const key = uniqueNameKey(object);
    const holders = this.#holders.get(key)?.filter((o) => o !== object) ?? [];
    if (holders.length > 0) this.#holders.set(key, holders);
    else this.#holders.delete(key);
    touchedNames.add(key);
  }

  #add(object: ManifestObject, changedKinds: Set<string>, touchedNames: Set<string>): void {
    const state = this.#kind(object.kind);
    state.members.add(object);
    state.valid = undefined;
    changedKinds.add(object.kind);
    state.counts.set(object.name, (state.counts.get(object.name) ?? 0) + 1);
    state.names.add(object.name);
    if (!object.name) return;
    const key = uniqueNameKey(object);
    const holders = [...(this.#holders.get(key) ?? []), object].sort(compareFileOrder);
    this.#holders.set(key, holders);
    touchedNames.add(key);
  }
}

/** The whole-snapshot run, for callers without a memo. */
export function checkWhole(
  objects: readonly ManifestObject[],
  options: RuleOptions,
  diagnose: Diagnose,
): Diagnostic[] {
  const findings: Diagnostic[] = [];
  const report: RuleContext["report"] = (target, pointer, rule, message, at) =>
    findings.push(diagnose(target, pointer, rule, message, at));
  checkUniqueNames(objects, report);
  const valid = new Map<string, ManifestObject[]>();
  const names = new Map<string, Set<string>>();
  for (const object of objects) {
    const named = names.get(object.kind);
    if (named) named.add(object.name);
    else names.set(object.kind, new Set([object.name]));
    if (!object.schemaValid) continue;
    const list = valid.get(object.kind);
    if (list) list.push(object);
    else valid.set(object.kind, [object]);
  }
  runCrossRules({
    objects,
    ofKind: (kind) => valid.get(kind) ?? [],
    names: (kind) => names.get(kind) ?? NO_NAMES,
    catalog: options.catalog,
    installedAddons: options.installedAddons,
    ...(options.sealCheck ? { sealCheck: options.sealCheck } : {}),
    report,
  });
  return findings;
}
