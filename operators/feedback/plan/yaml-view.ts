// The part of an object that git controls, rendered as YAML with sorted keys: what the plan
// diffs. The source's bookkeeping (managed-by label, revision and file annotations) is left out,
// so moving a document inside a file, or a new commit, is not a change.
import { stringify } from "yaml";
import {
  MANAGED_BY_LABEL,
  OVERLAY_KEYS_ANNOTATION,
  SOURCE_FILE_ANNOTATION,
  SOURCE_REVISION_ANNOTATION,
} from "../../api/index.ts";
import type { KubeObject } from "../../lib/store/index.ts";

const BOOKKEEPING = new Set([
  MANAGED_BY_LABEL,
  SOURCE_FILE_ANNOTATION,
  SOURCE_REVISION_ANNOTATION,
  OVERLAY_KEYS_ANNOTATION,
]);

type Dict = Record<string, unknown>;

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== "object") return value;
  const out: Dict = {};
  for (const key of Object.keys(value).sort()) {
    const child = (value as Dict)[key];
    if (child !== undefined) out[key] = sorted(child);
  }
  return out;
}

function strip(map: Record<string, string> | undefined, keep?: ReadonlySet<string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(map ?? {})) {
    if (BOOKKEEPING.has(key)) continue;
    if (keep && !keep.has(key)) continue;
    out[key] = value;
  }
  return out;
}

function overlayKeys(object: KubeObject): { labels: Set<string>; annotations: Set<string> } {
  try {
    const parsed = JSON.parse(object.metadata.annotations?.[OVERLAY_KEYS_ANNOTATION] ?? "{}") as {
      labels?: string[];
      annotations?: string[];
    };
    return { labels: new Set(parsed.labels ?? []), annotations: new Set(parsed.annotations ?? []) };
  } catch {
    return { labels: new Set(), annotations: new Set() };
  }
}

/** What git says about the object, comparable between a manifest and the live store. */
export function gitView(object: KubeObject, options: { liveNode?: boolean; specKeys?: string[] } = {}): Dict {
  let labels: Record<string, string>;
  let annotations: Record<string, string>;
  let spec = object.spec;
  if (options.liveNode) {
    // A live Node carries the agent's observed labels too; only the overlay's keys come from git.
    const keys = overlayKeys(object);
    labels = strip(object.metadata.labels, keys.labels);
    annotations = strip(object.metadata.annotations, keys.annotations);
    if (spec && typeof spec === "object" && options.specKeys) {
      const wanted = new Set([...options.specKeys, "unschedulable"]);
      spec = Object.fromEntries(Object.entries(spec as Dict).filter(([key]) => wanted.has(key)));
    }
  } else {
    labels = strip(object.metadata.labels);
    annotations = strip(object.metadata.annotations);
  }
  const metadata: Dict = {};
  if (Object.keys(labels).length > 0) metadata.labels = labels;
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  const view: Dict = {};
  if (Object.keys(metadata).length > 0) view.metadata = metadata;
  if (spec !== undefined && !(typeof spec === "object" && spec !== null && Object.keys(spec).length === 0))
    view.spec = spec;
  return sorted(view) as Dict;
}

export function viewYaml(view: Dict): string {
  return Object.keys(view).length === 0 ? "" : stringify(view, { sortMapEntries: true, lineWidth: 0 });
}
