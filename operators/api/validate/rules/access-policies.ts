import { arrayAt, type ObjectRule, objectAt } from "../rule-context.ts";
import { suggest } from "./job-specs.ts";

/**
 * An AccessPolicy names Users, Clusters and Domains that exist (a typo would silently grant
 * nothing, or later grant someone else), and an exec grant carries its command allowlist.
 */
export const accessPolicyRule: ObjectRule = {
  kinds: ["AccessPolicy"],
  names: ["User", "Cluster", "Domain"],
  check(policy, ctx) {
    const known = { User: ctx.names("User"), Cluster: ctx.names("Cluster"), Domain: ctx.names("Domain") };
    const spec = objectAt(policy.object, "spec");
    const references: Array<[string, "User" | "Cluster" | "Domain", unknown[]]> = [
      ["/spec/subjects/users", "User", arrayAt(objectAt(spec, "subjects"), "users")],
      ["/spec/targets/clusters", "Cluster", arrayAt(objectAt(spec, "targets"), "clusters")],
      ["/spec/targets/domains", "Domain", arrayAt(objectAt(spec, "targets"), "domains")],
    ];
    for (const [pointer, kind, names] of references) {
      names.forEach((name, i) => {
        if (typeof name !== "string" || known[kind].has(name)) return;
        ctx.report(
          policy,
          `${pointer}/${i}`,
          "cross/access-reference",
          `${kind} "${name}" is not defined in the repository${suggest(name, known[kind])}`,
        );
      });
    }
    const verbs = arrayAt(spec, "verbs");
    if (verbs.includes("exec") && arrayAt(spec, "commands").length === 0) {
      ctx.report(
        policy,
        "/spec/verbs",
        "cross/access-exec-commands",
        "the exec verb needs spec.commands, the allowlist of commands it permits",
      );
    }
    if (!verbs.includes("exec") && arrayAt(spec, "commands").length > 0) {
      ctx.report(
        policy,
        "/spec/commands",
        "cross/access-exec-commands",
        "commands are only read with the exec verb",
      );
    }
  },
};
