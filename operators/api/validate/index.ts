// Validation of a whole snapshot of manifests, pure: the documents and the addon catalog come
// from the caller (source/validate-paths.ts reads them from disk).
import type { AddonCatalog } from "../addon-catalog.ts";
import { checkSchema } from "../check-schema.ts";
import { API_VERSION, kindInfo, kinds } from "../kinds.ts";
import type { SchemaViolation } from "../violations.ts";
import { assignBundleContent, type PlainDocument } from "./bundle-content.ts";
import { compact } from "./compact.ts";
import { CrossMemo, checkWhole } from "./cross-memo.ts";
import { compareFileOrder, type Diagnose } from "./cross-rules.ts";
import { compareDiagnostics, type Diagnostic } from "./diagnostic.ts";
import { sizeViolations } from "./object-size.ts";
import type { ParsedDocument, Position } from "./parsed-document.ts";
import { isObject, type ManifestObject, type RuleContext, type SealCheck, stringAt } from "./rule-context.ts";
import { checkJobSpec, jobSpecSitesOf, suggest } from "./rules/job-specs.ts";

export type { Diagnostic } from "./diagnostic.ts";
export { compareDiagnostics, formatDiagnostic } from "./diagnostic.ts";
export type { ParsedDocument, Position } from "./parsed-document.ts";
export { REPORT_FORMATS, type ReportFormat, renderReport } from "./reporters.ts";
export type { ManifestObject, SealCheck } from "./rule-context.ts";
export { hubOpens, keyIdAmong } from "./rules/sealed-secrets.ts";

export interface ValidateOptions {
  /** Treat documents that are not RLark objects as errors instead of skipping them with a warning. */
  strict?: boolean;
  /**
   * Keep only what the cross-object rules read (no pod templates) in `objects`: for callers that
   * report and do not apply, such as `rlark validate`.
   */
  summarize?: boolean;
  /** What Addons are checked against (source/addon-catalog.ts reads the shipped one). */
  catalog: AddonCatalog;
  /**
   * The version each Addon (`<namespace>/<name>`, namespace "" when cluster-wide) runs now, from
   * its status: moving below it is a downgrade, refused unless the target version allows it.
   */
  installedAddons?: ReadonlyMap<string, string>;
  /**
   * How far a SealedSecret's values are checked beyond their form: the hub opens each one,
   * `rlark validate --hub-key` checks its key id is one of the hub's. Without it, the form only.
   */
  sealCheck?: SealCheck;
  /**
   * Checks kept from earlier runs: a document object seen before (a file the loader did not
   * parse again) is not schema-checked again, and the rules across objects run only over what
   * changed since the last run (cross-memo.ts). Only for callers that hand the same documents
   * back unchanged, with the same `strict` and `summarize`, one run at a time.
   */
  memo?: CheckMemo;
}

/** What the checks found, by document object, and the cross-object rules' state (see ValidateOptions.memo). */
export class CheckMemo {
  readonly #checked = new WeakMap<ParsedDocument, Checked>();
  /** @internal */
  readonly cross = new CrossMemo();

  /** @internal */
  get(document: ParsedDocument): Checked | undefined {
    return this.#checked.get(document);
  }

  /** @internal */
  set(document: ParsedDocument, checked: Checked): void {
    this.#checked.set(document, checked);
  }
}

type Checked =
  | { classified: Exclude<Classified, { object: Record<string, unknown> }> }
  | { manifest: ManifestObject; errors: Diagnostic[] };

export interface ValidationResult {
  valid: boolean;
  /** Non-empty YAML documents read. */
  documents: number;
  errors: Diagnostic[];
  warnings: Diagnostic[];
  /** The RLark objects found, valid or not, in file order. */
  objects: ManifestObject[];
}

export function validateDocuments(
  documents: ParsedDocument[],
  loadErrors: Diagnostic[],
  options: ValidateOptions,
): ValidationResult {
  const checker = new SnapshotChecker(options);
  for (const document of documents) checker.add(document);
  return checker.finish(loadErrors);
}

/**
 * Schema checks per document as it arrives, then the rules that need the whole snapshot: a
 * reader that streams documents never holds every full object.
 */
export class SnapshotChecker {
  #options: ValidateOptions;
  #errors: Diagnostic[] = [];
  #warnings: Diagnostic[] = [];
  #objects: ManifestObject[] = [];
  /** Kubernetes-shaped documents that are not RLark objects, each with what is said if no Bundle claims it. */
  #plain: { plain: PlainDocument; unclaimed: { diagnostic: Diagnostic; severity: "error" | "warning" } }[] =
    [];
  #documents = 0;

  /** Objects checked in this run (not kept from an earlier one), and files whose objects were kept. */
  #fresh: ManifestObject[] = [];
  #keptFiles = new Map<string, ManifestObject>();

  constructor(options: ValidateOptions) {
    this.#options = options;
    options.memo?.cross.begin();
  }

  add(document: ParsedDocument): void {
    this.#documents++;
    const memo = this.#options.memo;
    const known = memo?.get(document);
    if (known) {
      if ("manifest" in known) {
        this.#errors.push(...known.errors);
        this.#objects.push(known.manifest);
        if (!this.#keptFiles.has(document.file)) this.#keptFiles.set(document.file, known.manifest);
      } else this.#addClassified(known.classified);
      return;
    }
    const classified = classify(document, this.#options.strict === true);
    if (!("object" in classified)) {
      memo?.set(document, { classified });
      this.#addClassified(classified);
      return;
    }
    const errors: Diagnostic[] = [];
    const manifest = this.#check(document, classified, errors);
    // A Bundle's object is filled from other files' documents at finish(): never kept.
    if (manifest.kind !== "Bundle") memo?.set(document, { manifest, errors });
    this.#errors.push(...errors);
    this.#objects.push(manifest);
    this.#fresh.push(manifest);
  }

  #addClassified(classified: Exclude<Classified, { object: Record<string, unknown> }>): void {
    if ("plain" in classified) {
      this.#plain.push({ plain: classified.plain, unclaimed: classified });
      return;
    }
    (classified.severity === "error" ? this.#errors : this.#warnings).push(classified.diagnostic);
  }

  #check(
    document: ParsedDocument,
    classified: { object: Record<string, unknown>; kind: string },
    errors: Diagnostic[],
  ): ManifestObject {
    const { object, kind } = classified;
    const metadata = isObject(object.metadata) ? object.metadata : {};
    const manifest: ManifestObject = {
      kind,
      name: stringAt(metadata, "name") ?? "",
      namespace: stringAt(metadata, "namespace"),
      object,
      document,
      schemaValid: true,
    };
    const report = ({ path, rule, message }: SchemaViolation, at: "value" | "key") => {
      errors.push(diagnosticAt(manifest, document.locate(path, at), path, rule, message));
    };
    for (const violation of checkSchema(object)) {
      manifest.schemaValid = false;
      report(violation, violation.rule === "schema/additional-property" ? "key" : "value");
    }
    // Before summarising: the size is the whole object's.
    for (const violation of sizeViolations(object)) report(violation, "key");
    // What a Job spec answers alone is checked now, while the tasks are at hand.
    // Into `errors`, which the memo keeps with the document: a document not checked again still
    // carries these findings.
    if (manifest.schemaValid) {
      const reportRule: RuleContext["report"] = (target, pointer, rule, message, at) =>
        errors.push(diagnosticAt(target, target.document.locate(pointer, at), pointer, rule, message));
      for (const site of jobSpecSitesOf(manifest)) checkJobSpec(site, reportRule);
    }
    if (this.#options.summarize) {
      // Through JSON: the parser's strings are slices of the file text and would keep all of it.
      manifest.object = JSON.parse(JSON.stringify(compact(kind, object)));
      // The table's strings, not a copy per object: a Job of 100,000 then keeps only its names.
      manifest.kind = kindInfo(kind)?.kind ?? kind;
      manifest.object.kind = manifest.kind;
      manifest.object.apiVersion = API_VERSION;
      const copied = isObject(manifest.object.metadata) ? manifest.object.metadata : {};
      manifest.name = stringAt(copied, "name") ?? "";
      manifest.namespace = stringAt(copied, "namespace");
      (document as { value: unknown }).value = manifest.object;
    }
    return manifest;
  }

  finish(loadErrors: Diagnostic[]): ValidationResult {
    const errors = [...loadErrors, ...this.#errors];
    // Files may arrive in any order; rules report "the later of two" by file order, so sort first.
    const objects = this.#objects.sort(compareFileOrder);
    const diagnose: Diagnose = (target, pointer, rule, message, at) =>
      diagnosticAt(target, target.document.locate(pointer, at), pointer, rule, message);
    const report: RuleContext["report"] = (...args) => errors.push(diagnose(...args));
    this.#assignBundles(objects, errors, report);
    const ruleOptions = {
      catalog: this.#options.catalog,
      installedAddons: this.#options.installedAddons ?? new Map<string, string>(),
      ...(this.#options.sealCheck ? { sealCheck: this.#options.sealCheck } : {}),
    };
    const cross = this.#options.memo?.cross;
    errors.push(
      ...(cross
        ? cross.check(objects, { fresh: this.#fresh, keptFiles: this.#keptFiles }, ruleOptions, diagnose)
        : checkWhole(objects, ruleOptions, diagnose)),
    );
    errors.sort(compareDiagnostics);
    const warnings = this.#warnings.sort(compareDiagnostics);
    return { valid: errors.length === 0, documents: this.#documents, errors, warnings, objects };
  }

  /** Bundles' content from the plain documents; the others are skipped (or, strict, refused) as ever. */
  #assignBundles(objects: ManifestObject[], errors: Diagnostic[], report: RuleContext["report"]): void {
    const byFile = (a: PlainDocument, b: PlainDocument) =>
      a.document.file === b.document.file
        ? a.document.index - b.document.index
        : a.document.file < b.document.file
          ? -1
          : 1;
    const plain = this.#plain.map((p) => p.plain).sort(byFile);
    const bundles = objects.filter((o) => o.kind === "Bundle" && o.schemaValid);
    const unclaimed = new Set(
      assignBundleContent(
        bundles,
        plain,
        (target, pointer, rule, message) => {
          const pos = pointer ? target.document.locate(pointer) : target.document.start;
          errors.push(diagnosticAt(target, pos, pointer, rule, message));
        },
        (bundle, pointer, rule, message) => report(bundle, pointer, rule, message),
      ),
    );
    for (const { plain, unclaimed: said } of this.#plain) {
      if (!unclaimed.has(plain)) continue;
      (said.severity === "error" ? errors : this.#warnings).push(said.diagnostic);
    }
  }
}

/** A finding at `pos` in the document of `target` (an object, or a plain document). */
function diagnosticAt(
  target: { document: ParsedDocument; kind: string; name: string },
  pos: Position,
  path: string,
  rule: string,
  message: string,
): Diagnostic {
  return {
    file: target.document.file,
    line: pos.line,
    column: pos.column,
    kind: target.kind,
    name: target.name,
    path,
    rule,
    message,
  };
}

type Foreign = { diagnostic: Diagnostic; severity: "error" | "warning" };
type Classified =
  | { object: Record<string, unknown>; kind: string }
  | Foreign
  | (Foreign & { plain: PlainDocument });

function classify(document: ParsedDocument, strict: boolean): Classified {
  const value = document.value;
  const diagnostic = (rule: string, message: string, kind = "", path = ""): Diagnostic => {
    // About a field (/kind, /apiVersion): its line; about the whole document: where it starts.
    const at = path ? document.locate(path) : document.start;
    return {
      file: document.file,
      line: at.line,
      column: at.column,
      kind,
      name: isObject(value) ? (stringAt(value.metadata, "name") ?? "") : "",
      path,
      rule,
      message,
    };
  };
  // Skipped with a warning, or (under --strict) an error that says why, not that it was skipped.
  const foreign = (what: string, skipped = "; skipped"): Classified =>
    strict
      ? {
          diagnostic: diagnostic(
            "strict/foreign-document",
            `${what}; --strict allows only ${API_VERSION} documents`,
          ),
          severity: "error",
        }
      : { diagnostic: diagnostic("foreign/skipped", `${what}${skipped}`), severity: "warning" };
  if (!isObject(value)) return foreign("not a Kubernetes-style object (no apiVersion and kind)");
  const apiVersion = value.apiVersion;
  const kind = typeof value.kind === "string" ? value.kind : "";
  if (typeof apiVersion !== "string") return foreign("has no apiVersion; not an RLark object", ", skipped");
  if (apiVersion !== API_VERSION) {
    if (apiVersion.startsWith("rlinf.io/")) {
      return {
        diagnostic: diagnostic(
          "schema/api-version",
          `apiVersion ${apiVersion} is not served; use ${API_VERSION}`,
          kind,
          "/apiVersion",
        ),
        severity: "error",
      };
    }
    // Maybe a Bundle's content (bundle-content.ts); skipped as before when no Bundle claims it.
    return {
      ...(foreign(`${kind || "document"} of ${apiVersion} is not an RLark object`) as Foreign),
      plain: { document, object: value, kind },
    };
  }
  const info = kindInfo(kind);
  if (!info) {
    const known = kinds.filter((k) => k.writtenBy === "git").map((k) => k.kind);
    return {
      diagnostic: diagnostic(
        "schema/unknown-kind",
        `unknown kind "${kind}"${suggest(kind, known)}; ${API_VERSION} kinds are ${known.join(", ")}`,
        kind,
        "/kind",
      ),
      severity: "error",
    };
  }
  if (info.writtenBy !== "git") {
    return {
      diagnostic: diagnostic(
        "cross/not-from-git",
        `${kind} objects are written by the ${info.writtenBy}, not declared in git`,
        kind,
        "/kind",
      ),
      severity: "error",
    };
  }
  return { object: value, kind };
}
