// The rules that span objects, and how a whole snapshot runs them. cross-memo.ts runs the same
// rules over what changed since the last snapshot.
import type { Diagnostic } from "./diagnostic.ts";
import type { ManifestObject, ObjectRule, RuleContext, WholeRule } from "./rule-context.ts";
import { accessPolicyRule } from "./rules/access-policies.ts";
import { addonCatalogRules, clusterReferenceRule } from "./rules/cluster-references.ts";
import { domainCidrRules } from "./rules/domain-cidrs.ts";
import { jobSpecDomainRule } from "./rules/job-specs.ts";
import { kubeconfigDestinationRules } from "./rules/kubeconfig-destination.ts";
import { sealedSecretRules } from "./rules/sealed-secrets.ts";
import { sshKeyRules } from "./rules/ssh-keys.ts";
import { jobTeamRule, teamRules } from "./rules/teams.ts";
import { workflowDagRule } from "./rules/workflow-dag.ts";

/** Rules about one object given other kinds' names: the ones whose work grows with the Jobs. */
export const OBJECT_RULES: readonly ObjectRule[] = [
  jobSpecDomainRule,
  jobTeamRule,
  workflowDagRule,
  clusterReferenceRule,
  accessPolicyRule,
];

/** Rules that compare objects of a kind with each other, or read options that change. */
export const WHOLE_RULES: readonly WholeRule[] = [
  domainCidrRules,
  addonCatalogRules,
  sshKeyRules,
  sealedSecretRules,
  kubeconfigDestinationRules,
  teamRules,
];

/** Runs every cross-object rule over the whole snapshot. */
export function runCrossRules(ctx: RuleContext): void {
  for (const rule of OBJECT_RULES) {
    for (const kind of rule.kinds) for (const object of ctx.ofKind(kind)) rule.check(object, ctx);
  }
  for (const rule of WHOLE_RULES) rule.run(ctx);
}

/** The key two objects of one name clash on. */
export function uniqueNameKey(object: ManifestObject): string {
  return `${object.kind}\0${object.namespace ?? ""}\0${object.name}`;
}

/** What is said of `object`, defined again after `first`. */
export function duplicateName(
  object: ManifestObject,
  first: ManifestObject,
  report: RuleContext["report"],
): void {
  const where = `${first.document.file}:${first.document.start.line}`;
  const scope = object.namespace ? ` in namespace ${object.namespace}` : "";
  report(
    object,
    "/metadata/name",
    "cross/unique-name",
    `${object.kind} "${object.name}"${scope} is also defined at ${where}`,
  );
}

/** Each name once per kind and namespace: the later of two (file order) is reported. */
export function checkUniqueNames(objects: readonly ManifestObject[], report: RuleContext["report"]): void {
  const first = new Map<string, ManifestObject>();
  for (const object of objects) {
    if (!object.name) continue;
    const key = uniqueNameKey(object);
    const earlier = first.get(key);
    if (earlier) duplicateName(object, earlier, report);
    else first.set(key, object);
  }
}

/** File order: by file, then the document's index in it (the order rules say "the later of two" in). */
export function compareFileOrder(a: ManifestObject, b: ManifestObject): number {
  if (a.document.file === b.document.file) return a.document.index - b.document.index;
  return a.document.file < b.document.file ? -1 : 1;
}

export type Diagnose = (
  target: ManifestObject,
  pointer: string,
  rule: string,
  message: string,
  at?: "value" | "key",
) => Diagnostic;
