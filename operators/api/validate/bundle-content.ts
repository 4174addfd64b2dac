// A Bundle's content: the plain Kubernetes documents under its path (docs/bundles.md). The
// snapshot checker hands over every document that is not an RLark object; those under a Bundle's
// folder are checked here (allowed kind, no plain Secret, namespace, the kind's Kubernetes schema)
// and become the Bundle's spec.objects, labelled as the Bundle's, with its namespace. The rest are
// left to the caller, which skips them as before.
import path from "node:path";
import {
  BUNDLE_KINDS,
  checkKubernetesObject,
  DEFAULT_BUNDLE_KINDS,
  isBundleKind,
} from "../kubernetes-objects.ts";
import { BUNDLE_LABEL, MANAGED_BY_BUNDLE, MANAGED_BY_LABEL } from "../well-known.ts";
import type { ParsedDocument } from "./parsed-document.ts";
import { isObject, type ManifestObject, stringAt } from "./rule-context.ts";

/** A document that is not an RLark object but has the shape of a Kubernetes one. */
export interface PlainDocument {
  document: ParsedDocument;
  object: Record<string, unknown>;
  kind: string;
}

export type ReportDocument = (
  target: { document: ParsedDocument; kind: string; name: string },
  pointer: string,
  rule: string,
  message: string,
) => void;

/** As many objects as an AddonRelease carries; more belong in a second Bundle. */
const MAX_OBJECTS = 500;

/** The folder a Bundle's path names, relative to the snapshot's base like document.file. */
function folderOf(bundle: ManifestObject): string | undefined {
  const spec = isObject(bundle.object.spec) ? bundle.object.spec : undefined;
  const relative = stringAt(spec, "path");
  if (!relative) return undefined;
  const folder = path.posix.normalize(path.posix.join(path.posix.dirname(bundle.document.file), relative));
  return folder.replace(/\/+$/, "");
}

function inFolder(file: string, folder: string): boolean {
  return folder === "." ? !file.startsWith("../") : file.startsWith(`${folder}/`);
}

/**
 * Fills each schema-valid Bundle's spec.objects from the plain documents under its folder and
 * returns the documents no Bundle claims. A document under two Bundles' folders is an error:
 * which of them owns its object on a cluster would be a race.
 */
export function assignBundleContent(
  bundles: readonly ManifestObject[],
  plain: readonly PlainDocument[],
  report: ReportDocument,
  reportBundle: (bundle: ManifestObject, pointer: string, rule: string, message: string) => void,
): PlainDocument[] {
  const claimed = new Map<PlainDocument, ManifestObject>();
  const content = new Map<ManifestObject, PlainDocument[]>();
  for (const bundle of bundles) {
    const spec = bundle.object.spec as Record<string, unknown>;
    if (spec.objects !== undefined) {
      reportBundle(
        bundle,
        "/spec/objects",
        "bundle/objects-from-git",
        "spec.objects is filled by the hub from the documents under spec.path; put the manifests in that folder instead",
      );
    }
    const folder = folderOf(bundle);
    if (folder === undefined) continue;
    const mine: PlainDocument[] = [];
    for (const doc of plain) {
      if (!inFolder(doc.document.file, folder)) continue;
      const earlier = claimed.get(doc);
      if (earlier) {
        report(
          plainTarget(doc),
          "",
          "bundle/overlap",
          `this document is under the paths of two Bundles, "${earlier.name}" (${earlier.document.file}:${earlier.document.start.line}) and "${bundle.name}" (${bundle.document.file}:${bundle.document.start.line}); give each Bundle a folder of its own`,
        );
        continue;
      }
      claimed.set(doc, bundle);
      mine.push(doc);
    }
    content.set(bundle, mine);
  }
  for (const [bundle, docs] of content) fill(bundle, docs, report, reportBundle);
  return plain.filter((doc) => !claimed.has(doc));
}

function plainTarget(doc: PlainDocument): { document: ParsedDocument; kind: string; name: string } {
  return { document: doc.document, kind: doc.kind, name: stringAt(doc.object.metadata, "name") ?? "" };
}

function fill(
  bundle: ManifestObject,
  docs: readonly PlainDocument[],
  report: ReportDocument,
  reportBundle: (bundle: ManifestObject, pointer: string, rule: string, message: string) => void,
): void {
  const spec = bundle.object.spec as Record<string, unknown>;
  const namespace = stringAt(spec, "namespace") ?? "";
  const allowed: readonly string[] = Array.isArray(spec.allowedKinds)
    ? (spec.allowedKinds as string[])
    : DEFAULT_BUNDLE_KINDS;
  const where = `Bundle "${bundle.name}" (${bundle.document.file}:${bundle.document.start.line})`;
  const objects: Record<string, unknown>[] = [];
  const seen = new Map<string, PlainDocument>();
  let valid = true;
  for (const doc of docs) {
    const target = plainTarget(doc);
    const fail = (pointer: string, rule: string, message: string) => {
      valid = false;
      report(target, pointer, rule, message);
    };
    // Before anything that could quote the document: a Secret's values are never repeated.
    if (doc.kind === "Secret") {
      fail(
        "/kind",
        "bundle/plain-secret",
        `a plain Secret would keep its values in git; ${where} takes Secrets only as SealedSecrets (rlark seal, docs/secrets.md)`,
      );
      continue;
    }
    if (!allowed.includes(doc.kind)) {
      const hint = isBundleKind(doc.kind) ? "; add it to spec.allowedKinds" : "";
      fail(
        "/kind",
        "bundle/kind-not-allowed",
        `kind ${doc.kind || "(none)"} is not allowed in ${where}: allowed are ${allowed.join(", ")}${hint}`,
      );
      continue;
    }
    if (!isBundleKind(doc.kind)) continue; // allowedKinds is schema-checked: unreachable
    const metadata = isObject(doc.object.metadata) ? doc.object.metadata : {};
    const own = stringAt(metadata, "namespace");
    if (own !== undefined && own !== namespace) {
      fail(
        "/metadata/namespace",
        "bundle/namespace",
        `namespace ${JSON.stringify(own)} is not allowed in ${where}: its objects go into ${JSON.stringify(namespace)} (leave metadata.namespace out or set it to that)`,
      );
      continue;
    }
    const name = stringAt(metadata, "name");
    if (!name) {
      fail("/metadata", "bundle/name", "a Bundle's object needs metadata.name");
      continue;
    }
    const key = `${doc.kind}/${name}`;
    const earlier = seen.get(key);
    if (earlier) {
      fail(
        "/metadata/name",
        "bundle/unique-name",
        `${doc.kind} "${name}" is also defined at ${earlier.document.file}:${earlier.document.start.line}`,
      );
      continue;
    }
    seen.set(key, doc);
    const expected = BUNDLE_KINDS[doc.kind].apiVersion;
    if (doc.object.apiVersion !== expected) {
      fail(
        "/apiVersion",
        "bundle/api-version",
        `${doc.kind} is served as ${expected}, not ${String(doc.object.apiVersion)}`,
      );
      continue;
    }
    const violations = checkKubernetesObject(doc.kind, doc.object);
    for (const violation of violations) fail(violation.path, "bundle/kubernetes-schema", violation.message);
    if (violations.length > 0) continue;
    // Through JSON: the parser's strings are slices of the file text and would keep all of it.
    const object = JSON.parse(JSON.stringify(doc.object)) as Record<string, unknown>;
    const meta = object.metadata as Record<string, unknown>;
    meta.namespace = namespace;
    meta.labels = {
      ...(isObject(meta.labels) ? meta.labels : {}),
      [BUNDLE_LABEL]: bundle.name,
      [MANAGED_BY_LABEL]: MANAGED_BY_BUNDLE,
    };
    objects.push(object);
  }
  if (objects.length > MAX_OBJECTS) {
    reportBundle(
      bundle,
      "/spec/path",
      "bundle/too-many-objects",
      `the folder holds ${objects.length} objects, over ${MAX_OBJECTS} for one Bundle; split it into several Bundles`,
    );
    return;
  }
  if (valid) spec.objects = objects;
}
