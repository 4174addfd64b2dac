// Renders one catalog entry for one Addon: the manifests' YAML documents, in file-name order, with
// `{{ values.a.b }}` and `{{ addon.name|version|namespace }}` substituted (docs/addons.md). No code
// runs: the only operations are substitution and dropping a document whose
// `rlark.io/render-if` annotation is false. Same input, same output, byte for byte.
import { isMap, isScalar, isSeq, LineCounter, type Node, parseAllDocuments } from "yaml";
import type { KubeObject } from "../lib/kube-object.ts";
import type { CatalogEntry } from "./addon-catalog.ts";
import { ADDON_LABEL, MANAGED_BY_ADDON, MANAGED_BY_LABEL } from "./well-known.ts";

/** The annotation that switches a whole document off: `"{{ values.x.enabled }}"`. */
export const RENDER_IF_ANNOTATION = "rlark.io/render-if";
/**
 * Built-in kinds without a namespace. Every other object that names no namespace goes into the
 * Addon's; a custom resource of a cluster-scoped CRD must not name one either (the API server
 * refuses the apply otherwise, naming the object).
 */
const CLUSTER_SCOPED_KINDS: ReadonlySet<string> = new Set([
  "APIService",
  "CSIDriver",
  "CSINode",
  "ClusterRole",
  "ClusterRoleBinding",
  "CustomResourceDefinition",
  "IngressClass",
  "MutatingWebhookConfiguration",
  "Namespace",
  "PersistentVolume",
  "PriorityClass",
  "RuntimeClass",
  "StorageClass",
  "ValidatingAdmissionPolicy",
  "ValidatingAdmissionPolicyBinding",
  "ValidatingWebhookConfiguration",
  "VolumeAttachment",
]);

/** Where an Addon installs when its spec names no namespace. */
export const DEFAULT_ADDON_NAMESPACE = "rlark-system";

export interface AddonIdentity {
  /** The Addon's metadata.name. */
  name: string;
  version: string;
  /** The in-cluster namespace the Addon installs into. */
  namespace: string;
}

export class AddonRenderError extends Error {
  readonly file: string;
  readonly line: number;
  /** JSON pointer inside the document. */
  readonly path: string;
  /** What is wrong, without the location. */
  readonly problem: string;
  constructor(file: string, line: number, path: string, problem: string) {
    super(`${file}:${line}: ${path || "/"}: ${problem}`);
    this.name = "AddonRenderError";
    this.file = file;
    this.line = line;
    this.path = path;
    this.problem = problem;
  }
}

/** As the manifest loader's limit (source/manifest-parser.ts). */
const MAX_DEPTH = 200;
const REFERENCE = /\{\{\s*([A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*)\s*\}\}/g;
const WHOLE = /^\{\{\s*([A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*)\s*\}\}$/;

/**
 * The objects `entry` renders to with `values` (defaults already applied), in order, each
 * labelled as the Addon's (ADDON_LABEL, MANAGED_BY_LABEL) and, when namespaced and naming none,
 * put in the Addon's namespace. Throws
 * AddonRenderError naming the manifest file, line and field of the first problem.
 */
export function renderAddon(
  entry: CatalogEntry,
  values: Record<string, unknown>,
  addon: AddonIdentity,
): KubeObject[] {
  const scope = { values, addon: { name: addon.name, version: addon.version, namespace: addon.namespace } };
  const out: KubeObject[] = [];
  for (const manifest of entry.manifests) {
    const lines = new LineCounter();
    const docs = parseAllDocuments(manifest.text, { lineCounter: lines, uniqueKeys: true });
    const at = (node: Node | null | undefined) => lines.linePos(node?.range?.[0] ?? 0).line;
    for (const doc of Array.isArray(docs) ? docs : [docs]) {
      const [error] = doc.errors;
      if (error)
        throw new AddonRenderError(manifest.file, lines.linePos(error.pos[0]).line, "", error.message);
      if (doc.contents === null) continue;
      const fail = (node: Node | null | undefined, path: string, problem: string): never => {
        throw new AddonRenderError(manifest.file, at(node), path, problem);
      };
      const lookup = (node: Node, path: string, reference: string): unknown => {
        const [root, ...keys] = reference.split(".");
        let value: unknown = root === "values" || root === "addon" ? scope[root] : undefined;
        if (value === undefined)
          fail(node, path, `unknown reference {{ ${reference} }}: use values.* or addon.*`);
        for (const key of keys) {
          value = isObject(value) && Object.hasOwn(value, key) ? value[key] : undefined;
          if (value === undefined) fail(node, path, `{{ ${reference} }} has no value`);
        }
        return value;
      };
      const toJS = (node: Node | null, path: string, depth = 0): unknown => {
        if (node === null) return null;
        // A repository's catalog is input like any manifest: no nesting deep enough to exhaust the stack.
        if (depth > MAX_DEPTH) fail(node, path, `nesting deeper than ${MAX_DEPTH} levels`);
        if (isMap(node)) {
          const object: Record<string, unknown> = {};
          for (const pair of node.items) {
            const key = isScalar(pair.key) ? pair.key.value : undefined;
            if (typeof key !== "string" && typeof key !== "number")
              fail(pair.key as Node, path, "keys must be plain strings");
            const name = String(key);
            object[name] = toJS(pair.value as Node | null, `${path}/${escapeToken(name)}`, depth + 1);
          }
          return object;
        }
        if (isSeq(node))
          return node.items.map((item, i) => toJS(item as Node | null, `${path}/${i}`, depth + 1));
        if (isScalar(node)) {
          if (typeof node.value !== "string") return node.value;
          const whole = WHOLE.exec(node.value);
          if (whole) return structuredClone(lookup(node, path, whole[1] as string));
          return node.value.replace(REFERENCE, (_all, reference: string) => {
            const value = lookup(node, path, reference);
            if (isObject(value) || Array.isArray(value))
              fail(node, path, `{{ ${reference} }} is an object or list: it must be the whole value`);
            return String(value);
          });
        }
        return fail(node, path, "aliases and tags are not supported in addon manifests");
      };
      const object = toJS(doc.contents as Node, "");
      if (!isObject(object) || typeof object.apiVersion !== "string" || typeof object.kind !== "string")
        fail(doc.contents as Node, "", "each document must be a Kubernetes object with apiVersion and kind");
      const kube = object as unknown as KubeObject;
      if (!isObject(kube.metadata) || typeof kube.metadata.name !== "string" || kube.metadata.name === "")
        fail(doc.contents as Node, "/metadata/name", "each object needs metadata.name");
      const annotations = kube.metadata.annotations;
      if (annotations && RENDER_IF_ANNOTATION in annotations) {
        const on = annotations[RENDER_IF_ANNOTATION] as unknown;
        if (typeof on !== "boolean")
          fail(
            doc.contents as Node,
            `/metadata/annotations/${escapeToken(RENDER_IF_ANNOTATION)}`,
            "must be a boolean",
          );
        if (!on) continue;
        const { [RENDER_IF_ANNOTATION]: _on, ...rest } = annotations;
        kube.metadata.annotations = rest;
        if (Object.keys(rest).length === 0) delete kube.metadata.annotations;
      }
      kube.metadata.labels = {
        ...(isObject(kube.metadata.labels) ? kube.metadata.labels : {}),
        [ADDON_LABEL]: addon.name,
        [MANAGED_BY_LABEL]: MANAGED_BY_ADDON,
      };
      if (!CLUSTER_SCOPED_KINDS.has(kube.kind) && kube.metadata.namespace === undefined)
        kube.metadata.namespace = addon.namespace;
      out.push(kube);
    }
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function escapeToken(key: string): string {
  return key.replaceAll("~", "~0").replaceAll("/", "~1");
}
