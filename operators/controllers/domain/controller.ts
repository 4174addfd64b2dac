// The Domain controller's I/O: reads a Domain, its Jobs and their Pods, persists the address
// allocation in Domain status (optimistic concurrency: a concurrent writer makes this pass
// retry), then writes one DomainPeer per cluster. Allocations are persisted before any
// DomainPeer shows them, so an address an agent has seen is never handed to anyone else.

import type {
  Condition,
  Domain,
  DomainPeer,
  DomainPeerSpec,
  DomainStatus,
  Job,
  Pod,
} from "../../api/index.ts";
import { clusterOf, DOMAIN_LABEL, JOB_LABEL } from "../../api/index.ts";
import type {
  Controller,
  MapToKeys,
  ReconcileContext,
  ReconcileRequest,
  WatchSpec,
} from "../../lib/controller/index.ts";
import type { CertificateAuthority } from "../../lib/pki/index.ts";
import { deepEqual, isNotFound, type KubeObject, type Store } from "../../lib/store/index.ts";
import { DomainCertificates } from "./certificates.ts";
import { allocate, parseCidr } from "./ipam.ts";
import { claimOf, peerSpecs, podJob } from "./members.ts";
import { DomainMembership } from "./membership.ts";

export interface DomainControllerOptions {
  /** The hub CA; signs each member cluster's certificate for the Domain (role domain). */
  pki: CertificateAuthority;
  /** The hub's data dir: keys go to `<dataDir>/pki/domains/<name>/<cluster>.key` (0600). */
  dataDir: string;
  /** Domain certificate lifetime. Default 365 days. */
  certificateTtlMs?: number;
  /** Controller name (metrics label). Default "domain". */
  name?: string;
  workers?: number;
  resyncPeriod?: number;
}

export const EXHAUSTED_CONDITION = "AddressPoolExhausted";

function stringField(object: unknown, field: string): string | undefined {
  if (typeof object !== "object" || object === null) return undefined;
  const value = (object as Record<string, unknown>)[field];
  return typeof value === "string" ? value : undefined;
}

function condition(
  next: Omit<Condition, "lastTransitionTime">,
  previous: readonly Condition[] | undefined,
  now: string,
): Condition {
  const prev = previous?.find((c) => c.type === next.type);
  return {
    ...next,
    lastTransitionTime: prev?.status === next.status ? (prev.lastTransitionTime ?? now) : now,
  };
}

async function listPeers(store: Store, domain: string): Promise<DomainPeer[]> {
  const { items } = await store.list<DomainPeer>("DomainPeer", {
    labelSelector: { matchLabels: { [DOMAIN_LABEL]: domain } },
  });
  return items.filter((p) => p.metadata.name === domain);
}

async function deletePeer(store: Store, peer: DomainPeer): Promise<void> {
  try {
    await store.delete("DomainPeer", peer.metadata.namespace, peer.metadata.name);
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

async function podsOfJobs(store: Store, jobs: ReadonlySet<string>): Promise<Pod[]> {
  if (jobs.size === 0) return [];
  const { items } = await store.list<Pod>("Pod", {
    labelSelector: { matchExpressions: [{ key: JOB_LABEL, operator: "In", values: [...jobs].sort() }] },
  });
  return items.filter((p) => {
    const job = podJob(p);
    return job !== undefined && jobs.has(job);
  });
}

async function writePeers(
  store: Store,
  domain: Domain,
  desired: ReadonlyMap<string, DomainPeerSpec>,
  existing: readonly DomainPeer[],
): Promise<void> {
  const name = domain.metadata.name;
  const current = new Map(existing.map((p) => [p.metadata.namespace ?? "", p]));
  for (const [namespace, spec] of desired) {
    const metadata = {
      name,
      namespace,
      labels: { [DOMAIN_LABEL]: name },
      ownerReferences: [
        {
          apiVersion: domain.apiVersion,
          kind: "Domain",
          name,
          uid: domain.metadata.uid ?? "",
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    };
    const peer = current.get(namespace) ?? (await store.get<DomainPeer>("DomainPeer", namespace, name));
    if (!peer) {
      await store.create<DomainPeer>({ apiVersion: "rlinf.io/v1alpha1", kind: "DomainPeer", metadata, spec });
    } else if (
      !deepEqual(peer.spec, spec) ||
      !deepEqual(peer.metadata.labels, metadata.labels) ||
      !deepEqual(peer.metadata.ownerReferences, metadata.ownerReferences)
    ) {
      await store.update<DomainPeer>({ ...peer, metadata: { ...peer.metadata, ...metadata }, spec });
    }
  }
  for (const peer of existing) if (!desired.has(peer.metadata.namespace ?? "")) await deletePeer(store, peer);
}

function makeReconcile(certificates: DomainCertificates, membership: DomainMembership) {
  return async function reconcileDomain(request: ReconcileRequest, context: ReconcileContext): Promise<void> {
    const { store, clock, logger } = context;
    const name = request.name;
    const domain = await store.get<Domain>("Domain", "", name);
    if (!domain || domain.metadata.deletionTimestamp) {
      // DomainPeers carry the key: they go with the Domain, whatever else holds it.
      for (const peer of await listPeers(store, name)) await deletePeer(store, peer);
      if (!domain) certificates.remove(name);
      return;
    }
    const previous: DomainStatus = domain.status ?? {};
    const now = new Date(clock.now()).toISOString();
    let range: ReturnType<typeof parseCidr>;
    try {
      range = parseCidr(domain.spec.cidr);
    } catch (error) {
      await store.updateStatus<Domain>({
        ...domain,
        status: {
          ...previous,
          conditions: [
            condition(
              { type: "Ready", status: "False", reason: "InvalidCIDR", message: (error as Error).message },
              previous.conditions,
              now,
            ),
          ],
        },
      });
      return;
    }

    // The index names the Jobs; a Job holding an address the index does not (yet) place here,
    // as after a restart before the Job watch caught up, is asked of the store, so an address
    // is never released on a stale index.
    const jobs = new Set(membership.jobsOf(name));
    const held = new Set((previous.ipAllocations ?? []).flatMap((a) => (a.job ? [a.job] : [])));
    for (const jobName of held) {
      if (jobs.has(jobName)) continue;
      const job = await store.get<Job>("Job", "", jobName);
      if (job?.spec.domain === name) jobs.add(jobName);
    }
    const pods = await podsOfJobs(store, jobs);
    const claims = pods.flatMap((p) => claimOf(p) ?? []);
    const result = allocate({
      cidr: domain.spec.cidr,
      allocations: previous.ipAllocations ?? [],
      released: previous.releasedAllocations ?? [],
      claims,
    });

    // Each cluster gets a certificate of its own (docs/domains.md): the pure part decides which.
    const desired = peerSpecs({
      pods,
      allocations: result.allocations,
      credentials: (cluster) => certificates.ensure(name, cluster),
      prefixLen: range.prefixLen,
    });
    certificates.retain(name, new Set([...desired.keys()].map((ns) => clusterOf(ns) as string)));

    const exhausted = result.unallocated.length > 0;
    const waiting = result.unallocated.map((c) => `${c.job}/${c.task}/${c.pod}`);
    const status: DomainStatus = {
      ipAllocations: result.allocations,
      releasedAllocations: result.released,
      certificate: [...desired.values()].map((spec) => spec.cert).join(""),
      conditions: [
        condition(
          exhausted
            ? {
                type: EXHAUSTED_CONDITION,
                status: "True",
                reason: "NoFreeAddress",
                message: `${waiting.length} pod(s) have no address (${waiting.slice(0, 10).join(", ")}${waiting.length > 10 ? ", ..." : ""}): ${domain.spec.cidr} has ${result.usable} usable addresses, all taken; widen spec.cidr or remove workloads`,
              }
            : {
                type: EXHAUSTED_CONDITION,
                status: "False",
                reason: "AddressesAvailable",
                message: `${result.allocations.length} of ${result.usable} addresses in use`,
              },
          previous.conditions,
          now,
        ),
        condition(
          exhausted
            ? {
                type: "Ready",
                status: "False",
                reason: EXHAUSTED_CONDITION,
                message: "some pods have no address",
              }
            : {
                type: "Ready",
                status: "True",
                reason: "Allocated",
                message: "every pod of the Domain has an address",
              },
          previous.conditions,
          now,
        ),
      ],
    };
    if (!status.releasedAllocations?.length) delete status.releasedAllocations;
    if (!status.certificate) delete status.certificate;
    if (domain.metadata.generation !== undefined) status.observedGeneration = domain.metadata.generation;
    const written = deepEqual(previous, status)
      ? domain
      : await store.updateStatus<Domain>({ ...domain, status });
    if (exhausted && previous.conditions?.find((c) => c.type === EXHAUSTED_CONDITION)?.status !== "True")
      logger.warn("domain address pool exhausted", {
        domain: name,
        cidr: domain.spec.cidr,
        waiting: waiting.length,
      });

    await writePeers(store, written, desired, await listPeers(store, name));
  };
}

/**
 * Maps Jobs and Pods to the Domains they concern. mapToKeys cannot read the store, so the Job
 * watch keeps a job → domain index the Pod watch reads; a Pod seen before its Job is covered by
 * the Job's own event, which queues the Domain too. Job status writes and Pod status churn
 * that change nothing a DomainPeer shows do not queue anything.
 */
function domainWatches(membership: DomainMembership): WatchSpec[] {
  const podFingerprint = new Map<string, string>();
  const jobs: MapToKeys = (job, type) => {
    const after = type === "DELETED" ? undefined : stringField(job.spec, "domain");
    const before = membership.set(job.metadata.name, after);
    // Only membership matters here; the Job controller's status writes change none.
    if (type === "MODIFIED" && before === after) return [];
    return [...new Set([before, after].filter((d): d is string => d !== undefined))];
  };
  const pods: MapToKeys = (object, type) => {
    const pod = object as KubeObject as Pod;
    const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
    const fingerprint = JSON.stringify([
      pod.metadata.uid,
      pod.metadata.labels,
      pod.metadata.deletionTimestamp,
      pod.spec,
      pod.status?.podIP,
    ]);
    if (type === "DELETED") podFingerprint.delete(key);
    else if (podFingerprint.get(key) === fingerprint) return [];
    else podFingerprint.set(key, fingerprint);
    const job = podJob(pod);
    const domain = job === undefined ? undefined : membership.domainOf(job);
    return domain === undefined ? [] : [domain];
  };
  // the agents' traffic figures change the status every few seconds: only the rest counts here
  const peerFingerprint = new Map<string, string>();
  const peers: MapToKeys = (peer, type) => {
    const key = `${peer.metadata.namespace}/${peer.metadata.name}`;
    const { uid, labels, deletionTimestamp, finalizers } = peer.metadata;
    const fingerprint = JSON.stringify([uid, labels, deletionTimestamp, finalizers, peer.spec]);
    if (type === "DELETED") peerFingerprint.delete(key);
    else if (peerFingerprint.get(key) === fingerprint) return [];
    else peerFingerprint.set(key, fingerprint);
    const domain = peer.metadata.labels?.[DOMAIN_LABEL];
    return domain ? [domain] : [];
  };
  return [
    { kind: "Job", mapToKeys: jobs },
    { kind: "Pod", mapToKeys: pods },
    { kind: "DomainPeer", mapToKeys: peers },
  ];
}

/** The Domain controller: virtual IPs, the Domain certificate, DomainPeers (seed 000 §2-3). */
export function createDomainController(options: DomainControllerOptions): Controller {
  const certificates = new DomainCertificates({
    pki: options.pki,
    dataDir: options.dataDir,
    ...(options.certificateTtlMs !== undefined ? { ttlMs: options.certificateTtlMs } : {}),
  });
  const membership = new DomainMembership();
  return {
    name: options.name ?? "domain",
    kind: "Domain",
    watches: domainWatches(membership),
    reconcile: makeReconcile(certificates, membership),
    ...(options.workers !== undefined ? { workers: options.workers } : {}),
    ...(options.resyncPeriod !== undefined ? { resyncPeriod: options.resyncPeriod } : {}),
  };
}
