import { join } from "node:path";
import type { Clock } from "../lib/clock.ts";
import {
  type CertificateAuthority,
  type HostIdentity,
  openCertificateAuthority,
  openHostIdentity,
} from "../lib/pki/index.ts";
import { createTunnelServer, type TunnelServer, type TunnelServerOptions } from "../lib/tunnel/index.ts";
import { createEnrollment, type Enrollment } from "./enrollment.ts";
import { fileTokenStore } from "./enrollment-tokens.ts";

export interface HubPki {
  ca: CertificateAuthority;
  host: HostIdentity;
  enrollment: Enrollment;
}

/**
 * The hub's CA, SSH host identity and bootstrap tokens, all under `<dataDir>/pki/`. The CLI
 * (`rlark token create`) opens the same directory to mint tokens for a running hub.
 */
export function openHubPki(options: {
  dataDir: string;
  /** The CA's read-only folder (`--ca-dir`); default `<dataDir>/pki`. */
  caDir?: string;
  clusterExists(name: string): boolean | Promise<boolean>;
  hostName?: string;
  now?: () => number;
  agentCertificateTtlMs?: number;
}): HubPki {
  const now = options.now ?? Date.now;
  const ca = openCertificateAuthority({
    dataDir: options.dataDir,
    ...(options.caDir ? { caDir: options.caDir } : {}),
    now,
  });
  const host = openHostIdentity({
    dataDir: options.dataDir,
    ca,
    now,
    ...(options.hostName ? { hostName: options.hostName } : {}),
  });
  const enrollment = createEnrollment({
    ca,
    tokens: fileTokenStore(join(options.dataDir, "pki", "tokens.json"), now),
    clusterExists: options.clusterExists,
    now,
    ...(options.agentCertificateTtlMs ? { certificateTtlMs: options.agentCertificateTtlMs } : {}),
  });
  return { ca, host, enrollment };
}

export type HubTunnelOptions = Omit<TunnelServerOptions, "hostKey" | "hostCert" | "ca" | "enrollment"> & {
  dataDir: string;
  caDir?: string;
  clusterExists(name: string): boolean | Promise<boolean>;
  clock?: Clock;
};

/** The hub's SSH endpoint with its PKI wired in; the composition calls `listen(2222)`. */
export function createHubTunnel(options: HubTunnelOptions): HubPki & { server: TunnelServer } {
  const { dataDir, caDir, clusterExists, ...rest } = options;
  const clock = options.clock;
  const pki = openHubPki({
    dataDir,
    ...(caDir ? { caDir } : {}),
    clusterExists,
    ...(clock ? { now: () => clock.now() } : {}),
  });
  const server = createTunnelServer({
    ...rest,
    hostKey: pki.host.privateKeyPem,
    hostCert: pki.host.certPem,
    ca: pki.ca,
    enrollment: pki.enrollment,
  });
  return { ...pki, server };
}
