// A report's pingMesh: an object, its serialised size bounded, so a broken or hostile agent cannot
// make the hub hold or write more than a cluster's mesh can need. Its fields are the hub's to
// check against the Cluster schema (agent-sync/pingmesh.ts), which knows them.

/** 16,384 node pairs of about 120 bytes each, with room to spare. */
export const MAX_PINGMESH_BYTES = 4 * 1024 * 1024;

/** What is wrong with a report's pingMesh, or undefined when it may go on to the hub's check. */
export function pingMeshReportProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "must be an object";
  if (JSON.stringify(value).length > MAX_PINGMESH_BYTES) return `is larger than ${MAX_PINGMESH_BYTES} bytes`;
  return undefined;
}
