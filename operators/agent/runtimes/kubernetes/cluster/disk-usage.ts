// A node's disk use from the kubelet's Stats Summary (seed 000 §4): nodefs plus a separate
// imagefs, counted once when both are the same filesystem. Pure: the runtime fetches the summary
// through the API server's node proxy.

interface FsStats {
  capacityBytes?: number;
  availableBytes?: number;
  usedBytes?: number;
}

const fsOf = (value: unknown): FsStats | undefined => {
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Record<string, unknown>;
  const n = (x: unknown) => (typeof x === "number" && Number.isFinite(x) && x >= 0 ? x : undefined);
  return {
    capacityBytes: n(v.capacityBytes),
    availableBytes: n(v.availableBytes),
    usedBytes: n(v.usedBytes),
  };
};

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;

/** used and total bytes, or undefined when the summary has no usable nodefs. */
export function diskUsageFromSummary(
  summary: unknown,
): { usedBytes: number; totalBytes: number } | undefined {
  const node = field(summary, "node");
  const nodefs = fsOf(field(node, "fs"));
  if (nodefs?.capacityBytes === undefined || nodefs.usedBytes === undefined) return undefined;
  let usedBytes = nodefs.usedBytes;
  let totalBytes = nodefs.capacityBytes;
  const imagefs = fsOf(field(field(node, "runtime"), "imageFs"));
  // the kubelet reads both from statfs at once: one filesystem reports identical figures
  const same =
    imagefs?.capacityBytes === nodefs.capacityBytes && imagefs?.availableBytes === nodefs.availableBytes;
  if (imagefs?.capacityBytes !== undefined && imagefs.usedBytes !== undefined && !same) {
    usedBytes += imagefs.usedBytes;
    totalBytes += imagefs.capacityBytes;
  }
  return { usedBytes, totalBytes };
}
