// Which objects a person may see, by team (docs/teams.md#visibility): a team's Jobs, their Tasks
// and pods, and the Domains its Jobs use are seen by the team's members alone, by admins, and by
// the subjects of an AccessPolicy that lists the team under targets.teams. Objects of no team
// (a Job that names none with no default Team, Clusters, Nodes, Teams, Addons, ...) are seen by
// everyone, as before Teams; a hub with no Team scopes nothing. Pure: the API's lists and gets,
// the dashboard's event stream and the access verbs (authorize.ts) all ask the same question.
import type { AccessPolicy, Job, Team, User } from "./generated/index.ts";
import { DOMAIN_LABEL, JOB_LABEL } from "./well-known.ts";

interface Scoped {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: unknown;
}

/** The team a Job counts against: its spec.team, else the Team marked default, else none. */
export function jobTeam(
  job: Pick<Job, "spec">,
  teams: readonly Pick<Team, "metadata" | "spec">[],
): string | undefined {
  return job.spec.team ?? teams.find((t) => t.spec.default === true)?.metadata.name;
}

/** The teams `user` is a member of. */
export function teamsOfUser(user: string, teams: readonly Pick<Team, "metadata" | "spec">[]): string[] {
  return teams.filter((t) => t.spec.members?.includes(user)).map((t) => t.metadata.name);
}

/** Teams an AccessPolicy naming the user (or one of its roles) opens to it by targets.teams. */
export function teamsGranted(
  policies: readonly AccessPolicy[],
  user: string,
  roles: readonly string[],
): string[] {
  const granted = new Set<string>();
  for (const policy of policies) {
    const { users = [], roles: named = [] } = policy.spec.subjects;
    if (!users.includes(user) && !named.some((role) => roles.includes(role))) continue;
    for (const team of policy.spec.targets?.teams ?? []) granted.add(team);
  }
  return [...granted];
}

export interface ScopeFacts {
  teams: readonly Team[];
  policies: readonly AccessPolicy[];
  /** A Job by name, as held now. */
  job(name: string): Job | undefined;
  /** Every Job (for the Domains' teams). */
  jobs(): Iterable<Job>;
}

/** Who asks: an admin sees everything; anyone else by user name and the roles git gives it. */
export interface Viewer {
  user: string;
  roles: readonly string[];
  admin: boolean;
}

/** The viewer of `user` as git declares it (roles from the User; none when it is gone). */
export function viewerOf(subject: string, role: string, user: User | undefined): Viewer {
  return { user: subject, roles: user?.spec.roles ?? [], admin: role === "admin" };
}

export type ObjectFilter = (object: Scoped) => boolean;

/**
 * A filter that says whether `viewer` may see an object, over `facts` as they are now; the
 * Domains' teams are worked out once per filter (call it again after Jobs change their Domain).
 */
export function teamFilter(facts: ScopeFacts, viewer: Viewer): ObjectFilter {
  if (viewer.admin || facts.teams.length === 0) return () => true;
  const open = new Set([
    ...teamsOfUser(viewer.user, facts.teams),
    ...teamsGranted(facts.policies, viewer.user, viewer.roles),
  ]);
  let domains: Map<string, Set<string>> | undefined;
  const domainTeams = (domain: string): Set<string> | undefined => {
    if (!domains) {
      domains = new Map();
      for (const job of facts.jobs()) {
        const team = jobTeam(job, facts.teams);
        if (!job.spec.domain || !team) continue;
        const set = domains.get(job.spec.domain) ?? new Set();
        set.add(team);
        domains.set(job.spec.domain, set);
      }
    }
    return domains.get(domain);
  };
  const teamOfJobNamed = (name: string | undefined): string | undefined => {
    const job = name ? facts.job(name) : undefined;
    return job ? jobTeam(job, facts.teams) : undefined;
  };
  const teamsOf = (object: Scoped): Iterable<string> | undefined => {
    switch (object.kind) {
      case "Job": {
        const team = jobTeam(object as Job, facts.teams);
        return team ? [team] : undefined;
      }
      case "Task":
      case "Pod": {
        const spec = object.spec as { job?: string } | undefined;
        const team = teamOfJobNamed(spec?.job ?? object.metadata.labels?.[JOB_LABEL]);
        return team ? [team] : undefined;
      }
      case "Domain":
        return domainTeams(object.metadata.name);
      case "DomainPeer": {
        const domain = object.metadata.labels?.[DOMAIN_LABEL];
        return domain ? domainTeams(domain) : undefined;
      }
      default:
        return undefined;
    }
  };
  return (object) => {
    const teams = teamsOf(object);
    if (!teams) return true;
    let any = false;
    for (const team of teams) {
      if (open.has(team)) return true;
      any = true;
    }
    return !any;
  };
}
