// The authorization of access requests against the store: who the user is now (User objects),
// which pod a login names (Pod mirrors), what the policies say (AccessPolicy objects), and a
// signal whenever any of those change so open sessions are checked again at once.
import {
  type AccessPolicy,
  clusterOf,
  type Job,
  jobTeam,
  type Pod,
  type Team,
  teamsOfUser,
  type User,
} from "../api/index.ts";
import { type KeptWatch, keepWatching, type Store } from "../lib/store/index.ts";
import {
  type AccessDecision,
  type AccessTarget,
  type AccessVerb,
  authorize,
  type Principal,
} from "./authorize.ts";
import type { PodSelector } from "./login-name.ts";
import { publicKeyBlob } from "./public-key.ts";

/** A pod found for a login: where it runs and what it belongs to. */
export interface ResolvedPod {
  cluster: string;
  /** The pod's namespace inside its cluster. */
  namespace: string;
  name: string;
  job?: string;
  task?: string;
  phase?: string;
  ready: boolean;
}

export class AccessDenied extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AccessDenied";
  }
}

const KINDS_THAT_DECIDE = ["User", "AccessPolicy", "Job", "Pod", "Team"] as const;

export class AccessControl {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /** The User as git declares it now, or undefined when it is gone. */
  async user(name: string): Promise<User | undefined> {
    return this.#store.get<User>("User", undefined, name);
  }

  /** The one pod a selector names; throws AccessDenied with what is wrong (none, ambiguous, not ready). */
  async resolvePod(selector: PodSelector): Promise<ResolvedPod> {
    const pods = (await this.#store.list<Pod>("Pod")).items.map(resolved).filter((p) => p !== undefined);
    if (selector.kind === "task") {
      const ready = pods
        .filter((p) => p.task === selector.task && p.ready)
        .sort((a, b) => a.name.localeCompare(b.name, "en", { numeric: true }));
      if (!ready[0]) throw new AccessDenied(`task ${selector.task} has no ready replica`);
      return ready[0];
    }
    const found = pods.filter(
      (p) =>
        p.name === selector.name && (selector.namespace === undefined || p.namespace === selector.namespace),
    );
    if (found.length === 0)
      throw new AccessDenied(`no pod ${selector.namespace ? `${selector.namespace}/` : ""}${selector.name}`);
    if (found.length > 1) {
      const where = found.map((p) => `${p.cluster}:${p.namespace}/${p.name}`).join(", ");
      throw new AccessDenied(`pod name ${selector.name} is ambiguous (${where}): use <namespace>/<pod>`);
    }
    return found[0] as ResolvedPod;
  }

  /** What the policies match on for a pod: its cluster, namespace, Job labels and Domain. */
  async target(pod: Pick<ResolvedPod, "cluster" | "namespace" | "name" | "job">): Promise<AccessTarget> {
    const job = pod.job ? await this.#store.get<Job>("Job", undefined, pod.job) : undefined;
    const domain = job?.spec.domain;
    const team = job ? jobTeam(job, (await this.#store.list<Team>("Team")).items) : undefined;
    return {
      cluster: pod.cluster,
      namespace: pod.namespace,
      pod: pod.name,
      ...(pod.job ? { job: pod.job, jobLabels: job?.metadata.labels ?? {} } : {}),
      ...(domain ? { domain } : {}),
      ...(team ? { team } : {}),
    };
  }

  /** `target` as the store has it now: its Job's labels and Domain may have changed since. */
  current(target: AccessTarget): Promise<AccessTarget> {
    const { cluster, namespace, pod: name, job } = target;
    return this.target({ cluster, namespace, name, ...(job ? { job } : {}) });
  }

  /** The pod mirrored as `name` in `agent-<cluster>` (the hub API's addressing). */
  async mirroredPod(mirrorNamespace: string, name: string): Promise<ResolvedPod | undefined> {
    const pod = await this.#store.get<Pod>("Pod", mirrorNamespace, name);
    return pod ? resolved(pod) : undefined;
  }

  /** The target of the pod mirrored as `name` in `agent-<cluster>`. */
  async mirroredTarget(mirrorNamespace: string, name: string): Promise<AccessTarget | undefined> {
    const found = await this.mirroredPod(mirrorNamespace, name);
    return found ? this.target(found) : undefined;
  }

  /**
   * authorize() with the User and the AccessPolicies the store holds now; with `loginKey` (an SSH
   * login's public key, wire format), only while the User still lists that key.
   */
  async decide(
    user: string,
    verb: AccessVerb,
    target: AccessTarget,
    command?: string,
    loginKey?: Buffer,
  ): Promise<AccessDecision> {
    const found = await this.user(user);
    if (!found) return { allowed: false, reason: `user ${user} is not declared in git` };
    if (loginKey && !found.spec.sshPublicKeys?.some((line) => publicKeyBlob(line)?.equals(loginKey)))
      return { allowed: false, reason: `the SSH key this login used is no longer listed for user ${user}` };
    const teams = teamsOfUser(user, (await this.#store.list<Team>("Team")).items);
    const principal: Principal = { user, roles: found.spec.roles, teams };
    const policies = (await this.#store.list<AccessPolicy>("AccessPolicy")).items;
    return authorize(policies, principal, verb, target, command);
  }

  /** Calls `listener` after any change that could change a decision. Resolves to a stop function. */
  async onChange(listener: () => void): Promise<() => void> {
    const watches: KeptWatch[] = [];
    // Kept open: a watch that ended (an apiserver restart) would let a revoked grant live on.
    for (const kind of KINDS_THAT_DECIDE) {
      watches.push(await keepWatching(this.#store, kind, () => listener(), { onResync: listener }));
    }
    return () => {
      for (const watch of watches) watch.stop();
    };
  }
}

function resolved(pod: Pod): ResolvedPod | undefined {
  const cluster = clusterOf(pod.metadata.namespace ?? "");
  if (!cluster) return undefined;
  const statuses = pod.status?.containerStatuses ?? [];
  return {
    cluster,
    namespace: pod.spec.namespace ?? "default",
    name: pod.metadata.name,
    ...(pod.spec.job ? { job: pod.spec.job } : {}),
    ...(pod.spec.task ? { task: pod.spec.task } : {}),
    ...(pod.status?.phase ? { phase: pod.status.phase } : {}),
    ready: pod.status?.phase === "Running" && statuses.length > 0 && statuses.every((s) => s.ready === true),
  };
}
