// Rules on Teams and the Jobs that name them (docs/teams.md): a Job's team exists, a member is a
// User, at most one Team is the default, a quota line's flavor is declared and each resource and
// flavor has one line, and borrowing needs a cohort to borrow from.

import { arrayAt, type ObjectRule, objectAt, stringAt, type WholeRule } from "../rule-context.ts";
import { jobSpecSitesOf, suggest } from "./job-specs.ts";

/** A Job spec's team exists. */
export const jobTeamRule: ObjectRule = {
  kinds: ["Job", "Workflow"],
  names: ["Team"],
  check(owner, ctx) {
    for (const site of jobSpecSitesOf(owner)) {
      const team = stringAt(site.spec, "team");
      if (team === undefined) continue;
      const teams = ctx.names("Team");
      if (teams.has(team)) continue;
      ctx.report(
        owner,
        `${site.pointer}/team`,
        "cross/team-exists",
        `Team "${team}" is not defined in the repository${suggest(team, teams)}`,
      );
    }
  },
};

/** Members, the one default, quota lines: Teams read among themselves and the Users. */
export const teamRules: WholeRule = {
  reads: ["Team", "User"],
  run: (ctx) => {
    const users = ctx.names("User");
    const defaults: string[] = [];
    for (const team of ctx.ofKind("Team")) {
      const spec = objectAt(team.object, "spec");
      arrayAt(spec, "members").forEach((member, i) => {
        if (typeof member === "string" && !users.has(member)) {
          ctx.report(
            team,
            `/spec/members/${i}`,
            "cross/team-member",
            `User "${member}" is not defined in the repository${suggest(member, users)}`,
          );
        }
      });
      if (spec?.default === true) {
        defaults.push(team.name);
        if (defaults.length > 1) {
          ctx.report(
            team,
            "/spec/default",
            "cross/team-default",
            `only one Team may be the default; ${defaults.slice(0, -1).join(", ")} already is`,
          );
        }
      }
      const flavors = new Set(arrayAt(spec, "flavors").map((f) => stringAt(f, "name")));
      const lines = new Set<string>();
      const cohort = stringAt(spec, "cohort");
      arrayAt(spec, "quota").forEach((line, i) => {
        const resource = stringAt(line, "resource") ?? "";
        const flavor = stringAt(line, "flavor");
        if (flavor !== undefined && !flavors.has(flavor)) {
          ctx.report(
            team,
            `/spec/quota/${i}/flavor`,
            "cross/team-flavor",
            `flavor "${flavor}" is not in spec.flavors${suggest(
              flavor,
              [...flavors].filter((f) => f !== undefined),
            )}`,
          );
        }
        const key = flavor ? `${resource} (flavor ${flavor})` : resource;
        if (lines.has(key)) {
          ctx.report(team, `/spec/quota/${i}`, "cross/team-quota-line", `a second quota line for ${key}`);
        }
        lines.add(key);
        if (stringAt(line, "borrowingLimit") !== undefined && cohort === undefined) {
          ctx.report(
            team,
            `/spec/quota/${i}/borrowingLimit`,
            "cross/team-borrowing",
            "a borrowing limit needs spec.cohort: there is nothing to borrow from",
          );
        }
      });
    }
  },
};
