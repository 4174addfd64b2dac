// Shared setup for the Domain controller tests: a real store and CA in a temp data dir, the
// real Manager, and the objects agents and git would write.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Domain, DomainPeer, Job, Pod } from "../../../operators/api/index.ts";
import { createDomainController } from "../../../operators/controllers/domain/index.ts";
import type { Manager } from "../../../operators/lib/controller/index.ts";
import { type CertificateAuthority, openCertificateAuthority } from "../../../operators/lib/pki/index.ts";
import { openSqliteStore, type Store } from "../../../operators/lib/store/index.ts";
import { runController } from "../run-controller.ts";

interface Teardown {
  teardown(fn: () => unknown): void;
}

export function tempDataDir(t: Teardown): string {
  const dir = mkdtempSync(join(tmpdir(), "rlark-domain-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface DomainHarness {
  store: Store;
  pki: CertificateAuthority;
  manager: Manager;
  /** Stops the controller and closes the store (a hub shutting down). */
  stop(): Promise<void>;
}

/** Opens the store and CA in dataDir and runs the Domain controller, as the hub does. */
export async function startDomainHarness(t: Teardown, dataDir: string): Promise<DomainHarness> {
  const store = openSqliteStore({ dataDir });
  const pki = openCertificateAuthority({ dataDir });
  const { manager, stop } = await runController(t, store, createDomainController({ pki, dataDir }));
  return { store, pki, manager, stop };
}

export function domain(name: string, cidr: string): Domain {
  return { apiVersion: "rlinf.io/v1alpha1", kind: "Domain", metadata: { name }, spec: { cidr } };
}

export function job(name: string, domainName?: string): Job {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Job",
    metadata: { name },
    spec: { ...(domainName ? { domain: domainName } : {}), tasks: [] },
  };
}

export interface PodOptions {
  podIP?: string;
  node?: string;
  uid?: string;
}

/** A Pod mirror as an agent pushes it: namespace agent-<cluster>, labels, spec and status. */
export function pod(cluster: string, name: string, jobName: string, task: string, o: PodOptions = {}): Pod {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Pod",
    metadata: {
      name,
      namespace: `agent-${cluster}`,
      labels: { "rlinf.io/job": jobName, "rlinf.io/task": `${jobName}-${task}` },
    },
    spec: {
      job: jobName,
      task: `${jobName}-${task}`,
      node: o.node ?? `${cluster}-node-1`,
      namespace: "rlark-system",
      uid: o.uid ?? `uid-${cluster}-${name}`,
    },
    status: { phase: "Running", podIP: o.podIP ?? "172.17.0.5", hostIP: "192.168.1.10" },
  };
}

export async function allocations(store: Store, name: string): Promise<Record<string, string>> {
  const d = await store.get<Domain>("Domain", "", name);
  return Object.fromEntries((d?.status?.ipAllocations ?? []).map((a) => [`${a.cluster}/${a.pod}`, a.ip]));
}

export async function peers(store: Store, name: string): Promise<Map<string, DomainPeer>> {
  const { items } = await store.list<DomainPeer>("DomainPeer");
  return new Map(items.filter((p) => p.metadata.name === name).map((p) => [p.metadata.namespace ?? "", p]));
}
