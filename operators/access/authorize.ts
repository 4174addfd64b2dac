// Who may do what to which running pod, decided from the AccessPolicy objects in git alone:
// pure, so the SSH bastion, the logs and proxy routes and the tests all ask the same question.
import type { AccessPolicy } from "../api/index.ts";
import { compileLabelSelector, matches } from "../lib/store/index.ts";

export type AccessVerb = "shell" | "exec" | "files" | "logs" | "forward" | "proxy";
export const ACCESS_VERBS: readonly AccessVerb[] = ["shell", "exec", "files", "logs", "forward", "proxy"];

/**
 * The least role each verb needs before any AccessPolicy is asked (seed 000 §15, docs/roles.md):
 * a viewer only reads, so it may read a pod's logs; everything else runs something in the pod or
 * reaches a program there that may change things on any request, which is acting on work.
 */
export const VERB_ROLES: Readonly<Record<AccessVerb, "viewer" | "user">> = {
  shell: "user",
  exec: "user",
  files: "user",
  logs: "viewer",
  forward: "user",
  proxy: "user",
};

/** The roles that act on work; a User with only `viewer` has none of them. */
const ACTING_ROLES = ["user", "admin"];

/** The person asking: a User's name and roles as git declares them now. */
export interface Principal {
  user: string;
  roles: readonly string[];
  /** The Teams that list the user as a member (docs/teams.md#visibility). */
  teams?: readonly string[];
}

/** The pod asked for, with what the policies match on. */
export interface AccessTarget {
  cluster: string;
  /** The pod's namespace inside its cluster. */
  namespace: string;
  pod: string;
  /** The pod's Job, its labels and its Domain, when the pod belongs to one. */
  job?: string;
  jobLabels?: Readonly<Record<string, string>>;
  domain?: string;
  /** The team of the pod's Job (its spec.team, or the default Team). */
  team?: string;
}

export interface AccessDecision {
  allowed: boolean;
  /** Why: the granting policy's name, or what was missing. Safe to audit; shown unless hidden. */
  reason: string;
  /**
   * The pod is another team's and nothing opens that team to the user: the caller answers as if
   * the pod did not exist (so its existence does not leak) and audits the reason.
   */
  hidden?: true;
}

/** Characters that would let an allowlisted prefix smuggle a second command into a shell. */
const SHELL_SYNTAX = /[;&|<>$`\\"'(){}[\]*?~!#\n\r]/;

/** Splits an exec command line into argv; undefined when it uses shell syntax (exec runs no shell). */
export function execArgv(command: string): string[] | undefined {
  if (SHELL_SYNTAX.test(command)) return undefined;
  const argv = command.trim().split(/[ \t]+/);
  return argv[0] ? argv : undefined;
}

/** `command` equals an entry, or an entry `prefix *` and the command starts with `prefix `. */
export function commandAllowed(allowlist: readonly string[], command: string): boolean {
  const normalized = (execArgv(command) ?? []).join(" ");
  if (!normalized) return false;
  return allowlist.some((entry) =>
    entry.endsWith(" *") ? normalized.startsWith(entry.slice(0, -1)) : normalized === entry,
  );
}

function namesSubject(policy: AccessPolicy, principal: Principal): boolean {
  const { users = [], roles = [] } = policy.spec.subjects;
  return users.includes(principal.user) || roles.some((role) => principal.roles.includes(role));
}

function matchesTarget(policy: AccessPolicy, target: AccessTarget): boolean {
  const targets = policy.spec.targets;
  if (!targets) return true;
  if (targets.clusters && !targets.clusters.includes(target.cluster)) return false;
  if (targets.namespaces && !targets.namespaces.includes(target.namespace)) return false;
  if (targets.domains && !(target.domain && targets.domains.includes(target.domain))) return false;
  if (targets.teams && !(target.team && targets.teams.includes(target.team))) return false;
  if (targets.jobSelector) {
    // A selector names Jobs: a pod of no Job never matches one, not even an empty selector.
    if (!target.job) return false;
    if (!matches(compileLabelSelector(targets.jobSelector), target.jobLabels ?? {})) return false;
  }
  return true;
}

/**
 * Whether `principal` may `verb` the `target` pod (for exec, run `command`). A pod of a team the
 * user is not in is refused, hidden, unless the user is an admin or a policy naming the user lists
 * that team under targets.teams. Allowed only when
 * some policy names the user or one of its roles, matches the target and lists the verb (and
 * for exec, the command), and the User has the verb's least role (VERB_ROLES); no role, not even
 * admin, has any verb by itself.
 */
export function authorize(
  policies: readonly AccessPolicy[],
  principal: Principal,
  verb: AccessVerb,
  target: AccessTarget,
  command?: string,
): AccessDecision {
  // First: a refusal for any other reason would tell the user that another team's pod exists.
  if (target.team && !principal.roles.includes("admin") && !principal.teams?.includes(target.team)) {
    const opened = policies.some(
      (policy) =>
        namesSubject(policy, principal) && policy.spec.targets?.teams?.includes(target.team as string),
    );
    if (!opened)
      return {
        allowed: false,
        hidden: true,
        reason: `${principal.user} is not in team ${target.team}, and no AccessPolicy lists that team`,
      };
  }
  if (VERB_ROLES[verb] === "user" && !principal.roles.some((role) => ACTING_ROLES.includes(role))) {
    return {
      allowed: false,
      reason: `${principal.user} is a viewer: ${verb} acts on the pod and needs the user or admin role`,
    };
  }
  if (verb === "exec" && (command === undefined || !execArgv(command))) {
    return { allowed: false, reason: "exec runs one command without a shell: no shell syntax allowed" };
  }
  const sorted = [...policies].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  let verbGranted = false;
  for (const policy of sorted) {
    if (!namesSubject(policy, principal) || !matchesTarget(policy, target)) continue;
    if (!policy.spec.verbs.includes(verb)) continue;
    verbGranted = true;
    if (verb === "exec" && !commandAllowed(policy.spec.commands ?? [], command ?? "")) continue;
    return { allowed: true, reason: `granted by AccessPolicy ${policy.metadata.name}` };
  }
  const where = `${target.cluster}/${target.namespace}/${target.pod}`;
  if (verbGranted) return { allowed: false, reason: `command not in the exec allowlist for ${where}` };
  return { allowed: false, reason: `no AccessPolicy grants ${principal.user} ${verb} on ${where}` };
}
