// The hand-written schemas under schemas/, keyed by file name. Everything else (types, CRDs,
// bundled schemas, validators) derives from these.
import accessPolicy from "../../schemas/access-policy.schema.json" with { type: "json" };
import addon from "../../schemas/addon.schema.json" with { type: "json" };
import addonRelease from "../../schemas/addon-release.schema.json" with { type: "json" };
import bundle from "../../schemas/bundle.schema.json" with { type: "json" };
import bundleRelease from "../../schemas/bundle-release.schema.json" with { type: "json" };
import cluster from "../../schemas/cluster.schema.json" with { type: "json" };
import common from "../../schemas/common.schema.json" with { type: "json" };
import domain from "../../schemas/domain.schema.json" with { type: "json" };
import domainPeer from "../../schemas/domain-peer.schema.json" with { type: "json" };
import job from "../../schemas/job.schema.json" with { type: "json" };
import node from "../../schemas/node.schema.json" with { type: "json" };
import pod from "../../schemas/pod.schema.json" with { type: "json" };
import sealedSecret from "../../schemas/sealed-secret.schema.json" with { type: "json" };
import task from "../../schemas/task.schema.json" with { type: "json" };
import team from "../../schemas/team.schema.json" with { type: "json" };
import user from "../../schemas/user.schema.json" with { type: "json" };
import workflow from "../../schemas/workflow.schema.json" with { type: "json" };

export type JsonSchema = Record<string, unknown>;

/** File name (as used in cross-file `$ref`s) to schema, in a stable order. */
export const sourceSchemas: ReadonlyMap<string, JsonSchema> = new Map<string, JsonSchema>([
  ["common.schema.json", common],
  ["job.schema.json", job],
  ["workflow.schema.json", workflow],
  ["domain.schema.json", domain],
  ["addon.schema.json", addon],
  ["cluster.schema.json", cluster],
  ["node.schema.json", node],
  ["user.schema.json", user],
  ["team.schema.json", team],
  ["access-policy.schema.json", accessPolicy],
  ["sealed-secret.schema.json", sealedSecret],
  ["bundle.schema.json", bundle],
  ["task.schema.json", task],
  ["domain-peer.schema.json", domainPeer],
  ["addon-release.schema.json", addonRelease],
  ["bundle-release.schema.json", bundleRelease],
  ["pod.schema.json", pod],
]);

export const SCHEMA_ID_BASE = "https://rlinf.io/schemas/v1alpha1/";

export function sourceSchema(file: string): JsonSchema {
  const schema = sourceSchemas.get(file);
  if (!schema) throw new Error(`no schema file ${file}`);
  return schema;
}
