import { type AddonCatalog, loadAddonCatalog } from "../../controllers/addon/catalog.ts";
import { loadManifests, type ParsedDocument } from "../../source/loader.ts";
import { API_VERSION, checkSchema, kindInfo, kinds } from "../index.ts";
import { compareDiagnostics, type Diagnostic } from "./diagnostic.ts";
import { type CrossRule, isObject, type ManifestObject, type RuleContext, stringAt } from "./rule-context.ts";
import { addonCatalogRules, clusterReferenceRules } from "./rules/cluster-references.ts";
import { domainCidrRules } from "./rules/domain-cidrs.ts";
import { jobSpecRules, suggest } from "./rules/job-specs.ts";
import { workflowDagRules } from "./rules/workflow-dag.ts";

export type { Diagnostic } from "./diagnostic.ts";
export { compareDiagnostics, formatDiagnostic } from "./diagnostic.ts";
export type { ManifestObject } from "./rule-context.ts";

export interface ValidateOptions {
  /** Treat documents that are not RLark objects as errors instead of skipping them with a warning. */
  strict?: boolean;
  catalog?: AddonCatalog;
}

export interface ValidationResult {
  valid: boolean;
  /** Non-empty YAML documents read. */
  documents: number;
  errors: Diagnostic[];
  warnings: Diagnostic[];
  /** The RLark objects found, valid or not, in file order. */
  objects: ManifestObject[];
}

const CROSS_RULES: CrossRule[] = [
  jobSpecRules,
  workflowDagRules,
  domainCidrRules,
  clusterReferenceRules,
  addonCatalogRules,
];

let cachedCatalog: AddonCatalog | undefined;

/** The catalog in the package, read once per process. */
function shippedCatalog(): AddonCatalog {
  if (!cachedCatalog) cachedCatalog = loadAddonCatalog();
  return cachedCatalog;
}

/** Loads every manifest under `paths` and validates the whole set: what `rlark validate` and the git source run. */
export async function validatePaths(
  paths: string[],
  options: ValidateOptions & { baseDir: string },
): Promise<ValidationResult> {
  const loaded = await loadManifests(paths, { baseDir: options.baseDir });
  return validateDocuments(loaded.documents, loaded.diagnostics, options);
}

export function validateDocuments(
  documents: ParsedDocument[],
  loadErrors: Diagnostic[],
  options: ValidateOptions = {},
): ValidationResult {
  const catalog = options.catalog ?? shippedCatalog();
  const errors = [...loadErrors];
  const warnings: Diagnostic[] = [];
  const objects: ManifestObject[] = [];

  for (const document of documents) {
    const classified = classify(document, options.strict === true);
    if ("diagnostic" in classified) {
      (classified.severity === "error" ? errors : warnings).push(classified.diagnostic);
      continue;
    }
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
    for (const violation of checkSchema(object)) {
      manifest.schemaValid = false;
      const pos = document.locate(
        violation.path,
        violation.rule === "schema/additional-property" ? "key" : "value",
      );
      errors.push({
        file: document.file,
        line: pos.line,
        column: pos.column,
        kind,
        name: manifest.name,
        path: violation.path,
        rule: violation.rule,
        message: violation.message,
      });
    }
    objects.push(manifest);
  }

  const report = (
    target: ManifestObject,
    pointer: string,
    rule: string,
    message: string,
    at?: "value" | "key",
  ) => {
    const pos = target.document.locate(pointer, at);
    errors.push({
      file: target.document.file,
      line: pos.line,
      column: pos.column,
      kind: target.kind,
      name: target.name,
      path: pointer,
      rule,
      message,
    });
  };
  checkUniqueNames(objects, report);
  const ctx = buildContext(objects, catalog, report);
  for (const rule of CROSS_RULES) rule(ctx);

  errors.sort(compareDiagnostics);
  warnings.sort(compareDiagnostics);
  return { valid: errors.length === 0, documents: documents.length, errors, warnings, objects };
}

type Classified =
  | { object: Record<string, unknown>; kind: string }
  | { diagnostic: Diagnostic; severity: "error" | "warning" };

function classify(document: ParsedDocument, strict: boolean): Classified {
  const value = document.value;
  const diagnostic = (rule: string, message: string, kind = "", path = ""): Diagnostic => ({
    file: document.file,
    line: document.start.line,
    column: document.start.column,
    kind,
    name: isObject(value) ? (stringAt(value.metadata, "name") ?? "") : "",
    path,
    rule,
    message,
  });
  const foreign = (message: string): Classified => ({
    diagnostic: diagnostic(strict ? "strict/foreign-document" : "foreign/skipped", message),
    severity: strict ? "error" : "warning",
  });
  if (!isObject(value)) return foreign("not a Kubernetes-style object (no apiVersion and kind); skipped");
  const apiVersion = value.apiVersion;
  const kind = typeof value.kind === "string" ? value.kind : "";
  if (typeof apiVersion !== "string") return foreign("has no apiVersion; not an RLark object, skipped");
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
    return foreign(`${kind || "document"} of ${apiVersion} is not an RLark object; skipped`);
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

function checkUniqueNames(objects: ManifestObject[], report: RuleContext["report"]) {
  const first = new Map<string, ManifestObject>();
  for (const object of objects) {
    if (!object.name) continue;
    const key = `${object.kind}\0${object.namespace ?? ""}\0${object.name}`;
    const earlier = first.get(key);
    if (!earlier) {
      first.set(key, object);
      continue;
    }
    const where = `${earlier.document.file}:${earlier.document.start.line}`;
    const scope = object.namespace ? ` in namespace ${object.namespace}` : "";
    report(
      object,
      "/metadata/name",
      "cross/unique-name",
      `${object.kind} "${object.name}"${scope} is also defined at ${where}`,
    );
  }
}

function buildContext(
  objects: ManifestObject[],
  catalog: AddonCatalog,
  report: RuleContext["report"],
): RuleContext {
  const valid = new Map<string, ManifestObject[]>();
  const names = new Map<string, Set<string>>();
  for (const object of objects) {
    if (!names.has(object.kind)) names.set(object.kind, new Set());
    names.get(object.kind)?.add(object.name);
    if (!object.schemaValid) continue;
    if (!valid.has(object.kind)) valid.set(object.kind, []);
    valid.get(object.kind)?.push(object);
  }
  return {
    objects,
    ofKind: (kind) => valid.get(kind) ?? [],
    names: (kind) => names.get(kind) ?? new Set(),
    catalog,
    report,
  };
}
