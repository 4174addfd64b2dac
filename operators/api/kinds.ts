// The registry of every kind in rlinf.io/v1alpha1: names, scope, who writes it, its schema.
import { bundleSchema } from "./bundle.ts";

export const API_VERSION = "rlinf.io/v1alpha1";

export interface KindInfo {
  kind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  /** Who owns the object's spec: git manifests, the hub's controllers, or a cluster's agent. */
  writtenBy: "git" | "hub" | "agent";
  /** The kind's JSON Schema (2020-12), self-contained: every `$ref` points into its own `$defs`. */
  schema: Record<string, unknown>;
  /** File under schemas/ the schema comes from. */
  schemaFile: string;
}

interface KindSource {
  kind: string;
  plural: string;
  namespaced: boolean;
  writtenBy: KindInfo["writtenBy"];
  schemaFile: string;
}

const sources: readonly KindSource[] = [
  { kind: "Job", plural: "jobs", namespaced: false, writtenBy: "git", schemaFile: "job.schema.json" },
  {
    kind: "Workflow",
    plural: "workflows",
    namespaced: false,
    writtenBy: "git",
    schemaFile: "workflow.schema.json",
  },
  {
    kind: "Domain",
    plural: "domains",
    namespaced: false,
    writtenBy: "git",
    schemaFile: "domain.schema.json",
  },
  { kind: "Addon", plural: "addons", namespaced: true, writtenBy: "git", schemaFile: "addon.schema.json" },
  {
    kind: "Cluster",
    plural: "clusters",
    namespaced: false,
    writtenBy: "git",
    schemaFile: "cluster.schema.json",
  },
  // Git holds the admin overlay of a Node; the agent writes its status.
  { kind: "Node", plural: "nodes", namespaced: true, writtenBy: "git", schemaFile: "node.schema.json" },
  { kind: "User", plural: "users", namespaced: false, writtenBy: "git", schemaFile: "user.schema.json" },
  { kind: "Team", plural: "teams", namespaced: false, writtenBy: "git", schemaFile: "team.schema.json" },
  {
    kind: "AccessPolicy",
    plural: "accesspolicies",
    namespaced: false,
    writtenBy: "git",
    schemaFile: "access-policy.schema.json",
  },
  {
    kind: "SealedSecret",
    plural: "sealedsecrets",
    namespaced: true,
    writtenBy: "git",
    schemaFile: "sealed-secret.schema.json",
  },
  {
    kind: "Bundle",
    plural: "bundles",
    namespaced: false,
    writtenBy: "git",
    schemaFile: "bundle.schema.json",
  },
  { kind: "Task", plural: "tasks", namespaced: true, writtenBy: "hub", schemaFile: "task.schema.json" },
  {
    kind: "DomainPeer",
    plural: "domainpeers",
    namespaced: true,
    writtenBy: "hub",
    schemaFile: "domain-peer.schema.json",
  },
  {
    kind: "AddonRelease",
    plural: "addonreleases",
    namespaced: true,
    writtenBy: "hub",
    schemaFile: "addon-release.schema.json",
  },
  {
    kind: "BundleRelease",
    plural: "bundlereleases",
    namespaced: true,
    writtenBy: "hub",
    schemaFile: "bundle-release.schema.json",
  },
  { kind: "Pod", plural: "pods", namespaced: true, writtenBy: "agent", schemaFile: "pod.schema.json" },
];

export const kinds: readonly KindInfo[] = sources.map((source) =>
  Object.freeze({
    ...source,
    singular: source.kind.toLowerCase(),
    schema: bundleSchema(source.schemaFile),
  }),
);

const byKind = new Map(kinds.map((info) => [info.kind, info]));
const byPlural = new Map(kinds.map((info) => [info.plural, info]));

export function kindInfo(kind: string): KindInfo | undefined {
  return byKind.get(kind);
}

export function kindByPlural(plural: string): KindInfo | undefined {
  return byPlural.get(plural);
}
