// What the nodeserver counts per pair of virtual IPs (source > target), shown by GET /stats.

export interface PairStats {
  activeStreams: number;
  /** Same-cluster connections handed to the pods to make directly (their bytes pass no nodeserver). */
  directConnections: number;
  bytesSent: number;
  bytesReceived: number;
  path: "local" | "hub";
}
