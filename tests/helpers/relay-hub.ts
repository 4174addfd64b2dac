// A hub with its Domain relay on, for the relay and data-path tests: Domains with their IP
// allocations, and the DomainPeer that hands a cluster's nodeserver its certificate for the Domain.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Test } from "tap";
import type { Domain, DomainPeer } from "../../operators/api/index.ts";
import { DomainCertificates } from "../../operators/controllers/domain/index.ts";
import { type Hub, type HubOptions, startHub } from "../../operators/hub/index.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { relayEngineOptions } from "./relay-engine.ts";

export interface RelayHub {
  hub: Hub;
  /** The test's folder (the hub's data is in hub/), removed at teardown. */
  dir: string;
  certificates: DomainCertificates;
  /** Creates Domain `name` with these members; returns each cluster's certificate for it. */
  domain(
    name: string,
    cidr: string,
    allocations: readonly { ip: string; cluster: string }[],
  ): Promise<(cluster: string) => { certPem: string; keyPem: string }>;
  /**
   * The DomainPeer of `name` in the cluster's namespace, as the Domain controller writes it (with
   * the cluster's certificate and these pods' addresses).
   */
  peer(name: string, cluster: string, ips?: readonly string[]): Promise<void>;
}

export async function startRelayHub(
  t: Test,
  prefix: string,
  more: Partial<HubOptions> = {},
): Promise<RelayHub> {
  const dir = mkdtempSync(path.join(tmpdir(), `rlark-${prefix}-`));
  const hub = await startHub({
    dataDir: path.join(dir, "hub"),
    http: "127.0.0.1:0",
    ssh: "127.0.0.1:0",
    domainRelay: "127.0.0.1:0",
    ...relayEngineOptions(),
    controllers: () => [],
    logger: silentLogger,
    ...more,
  });
  t.teardown(async () => {
    await hub.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const certificates = new DomainCertificates({ pki: hub.pki.ca, dataDir: path.join(dir, "hub") });
  return {
    hub,
    dir,
    certificates,
    async domain(name, cidr, allocations) {
      const domain = await hub.store.create<Domain>({
        apiVersion: "rlinf.io/v1alpha1",
        kind: "Domain",
        metadata: { name },
        spec: { cidr },
      } as Domain);
      await hub.store.updateStatus<Domain>({ ...domain, status: { ipAllocations: [...allocations] } });
      return (cluster) => certificates.ensure(name, cluster);
    },
    async peer(name, cluster, ips = []) {
      const cert = certificates.ensure(name, cluster);
      await hub.store.create<DomainPeer>({
        apiVersion: "rlinf.io/v1alpha1",
        kind: "DomainPeer",
        metadata: { name, namespace: `agent-${cluster}` },
        spec: {
          cert: cert.certPem,
          key: cert.keyPem,
          prefixLen: 24,
          pods: ips.map((ip, i) => ({ name: `p${i}`, ip, globalNamespace: `agent-${cluster}` })),
        },
      });
    },
  };
}
