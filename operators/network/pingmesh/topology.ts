// NodeTopology: where a node sits (zone, rack, ToR, subnet, network plane, node pool), merged from
// what the node really says: its Node labels, its hostname, a static config. A field no source
// gives stays absent: unknown is never filled with a made-up default (seed 002).

export const TOPOLOGY_FIELDS = [
  "region",
  "zone",
  "rack",
  "tor",
  "subnet",
  "plane",
  "pool",
  "hostname",
] as const;
export type TopologyField = (typeof TOPOLOGY_FIELDS)[number];
export type NodeTopology = Partial<Record<TopologyField, string>>;

/** The Node labels each field is read from, well-known ones first. */
export const TOPOLOGY_LABELS: Readonly<Record<TopologyField, readonly string[]>> = {
  region: ["topology.kubernetes.io/region"],
  zone: ["topology.kubernetes.io/zone"],
  rack: ["topology.rlark.io/rack"],
  tor: ["topology.rlark.io/tor"],
  subnet: ["topology.rlark.io/subnet"],
  plane: ["topology.rlark.io/network-plane"],
  pool: ["topology.rlark.io/node-pool", "cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup"],
  hostname: ["kubernetes.io/hostname"],
};

const MAX_VALUE = 253;

/** The fields a node's labels give. */
export function topologyFromLabels(labels: Readonly<Record<string, string>> | undefined): NodeTopology {
  const topology: NodeTopology = {};
  for (const field of TOPOLOGY_FIELDS) {
    for (const label of TOPOLOGY_LABELS[field]) {
      const value = labels?.[label];
      if (value) {
        topology[field] = value;
        break;
      }
    }
  }
  return topology;
}

/**
 * A static config's fields (`{"zone": "z1", "rack": "r4"}`), checked: an unknown field or a value
 * that is not a short non-empty string is an error naming it, rather than a label silently lost.
 */
export function topologyFromConfig(config: unknown, where: string): NodeTopology {
  if (typeof config !== "object" || config === null || Array.isArray(config))
    throw new Error(`${where}: the topology must be an object of ${TOPOLOGY_FIELDS.join(", ")}`);
  const topology: NodeTopology = {};
  for (const [key, value] of Object.entries(config)) {
    if (!(TOPOLOGY_FIELDS as readonly string[]).includes(key))
      throw new Error(
        `${where}: unknown topology field ${JSON.stringify(key)} (one of ${TOPOLOGY_FIELDS.join(", ")})`,
      );
    if (typeof value !== "string" || value === "" || value.length > MAX_VALUE)
      throw new Error(
        `${where}: topology field ${key} must be a non-empty string of at most ${MAX_VALUE} characters`,
      );
    topology[key as TopologyField] = value;
  }
  return topology;
}

/** Earlier sources win field by field (static config over labels over the hostname). */
export function mergeTopology(...sources: readonly NodeTopology[]): NodeTopology {
  const merged: NodeTopology = {};
  for (const source of sources)
    for (const field of TOPOLOGY_FIELDS)
      if (merged[field] === undefined && source[field]) merged[field] = source[field];
  return merged;
}
