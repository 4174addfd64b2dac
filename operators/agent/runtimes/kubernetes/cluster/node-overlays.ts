// Git's Node overlays (admin labels, annotations, cordon) → JSON merge patches for the real
// nodes, without I/O. A patch names only the overlay's keys, so every other field of the node,
// whoever set it, is left alone. The keys an overlay set are recorded on the node
// (OVERLAY_KEYS_ANNOTATION), so a key the next overlay drops is removed, and only such a key.

import { OVERLAY_KEYS_ANNOTATION } from "../../../../api/index.ts";
import type { NodeOverlay } from "../../types.ts";

export interface NodeFields {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  unschedulable: boolean;
}

interface Recorded {
  labels: string[];
  annotations: string[];
  unschedulable: boolean;
}

export interface NodePatch {
  metadata?: { labels?: Record<string, string | null>; annotations?: Record<string, string | null> };
  spec?: { unschedulable: boolean | null };
}

function recorded(node: NodeFields): Recorded {
  const raw = node.annotations[OVERLAY_KEYS_ANNOTATION];
  const none: Recorded = { labels: [], annotations: [], unschedulable: false };
  if (!raw) return none;
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value !== "object" || value === null) return none;
    const v = value as Record<string, unknown>;
    const strings = (x: unknown): string[] =>
      Array.isArray(x) ? x.filter((s): s is string => typeof s === "string") : [];
    return {
      labels: strings(v.labels),
      annotations: strings(v.annotations),
      unschedulable: v.unschedulable === true,
    };
  } catch {
    return none;
  }
}

function mapPatch(
  current: Record<string, string>,
  wanted: Record<string, string>,
  before: readonly string[],
): Record<string, string | null> {
  const patch: Record<string, string | null> = {};
  for (const [k, v] of Object.entries(wanted)) if (current[k] !== v) patch[k] = v;
  for (const k of before) if (!(k in wanted) && k in current) patch[k] = null;
  return patch;
}

const sorted = (keys: Iterable<string>): string[] => [...keys].sort();

/**
 * The merge patch that brings `node` to `overlay` (undefined: no overlay any more, so revert what
 * earlier overlays set), or undefined when the node already matches.
 */
export function overlayPatch(node: NodeFields, overlay: NodeOverlay | undefined): NodePatch | undefined {
  const before = recorded(node);
  const labels = overlay?.labels ?? {};
  const annotations = { ...(overlay?.annotations ?? {}) };
  delete annotations[OVERLAY_KEYS_ANNOTATION];
  const labelPatch = mapPatch(node.labels, labels, before.labels);
  const annotationPatch = mapPatch(node.annotations, annotations, before.annotations);

  const next: Recorded = {
    labels: sorted(Object.keys(labels)),
    annotations: sorted(Object.keys(annotations)),
    unschedulable: overlay?.unschedulable !== undefined,
  };
  const empty = next.labels.length === 0 && next.annotations.length === 0 && !next.unschedulable;
  const record = empty
    ? null
    : JSON.stringify({
        annotations: next.annotations,
        labels: next.labels,
        unschedulable: next.unschedulable,
      });
  const current = node.annotations[OVERLAY_KEYS_ANNOTATION] ?? null;
  if (record !== current) annotationPatch[OVERLAY_KEYS_ANNOTATION] = record;

  let spec: NodePatch["spec"];
  if (overlay?.unschedulable !== undefined) {
    if (node.unschedulable !== overlay.unschedulable) spec = { unschedulable: overlay.unschedulable };
  } else if (before.unschedulable && node.unschedulable) {
    // the overlay that cordoned the node is gone: uncordon
    spec = { unschedulable: null };
  }

  const metadata: NonNullable<NodePatch["metadata"]> = {};
  if (Object.keys(labelPatch).length > 0) metadata.labels = labelPatch;
  if (Object.keys(annotationPatch).length > 0) metadata.annotations = annotationPatch;
  if (!metadata.labels && !metadata.annotations && !spec) return undefined;
  return {
    ...(metadata.labels || metadata.annotations ? { metadata } : {}),
    ...(spec ? { spec } : {}),
  };
}

/** Whether earlier overlays left keys on this node (so it needs a patch even without an overlay now). */
export const hasOverlayRecord = (node: NodeFields): boolean => OVERLAY_KEYS_ANNOTATION in node.annotations;
