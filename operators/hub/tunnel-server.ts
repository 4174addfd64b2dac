import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Clock, systemClock } from "../lib/clock.ts";
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
  clock?: Clock;
  agentCertificateTtlMs?: number;
}): HubPki {
  const clock = options.clock ?? systemClock;
  const ca = openCertificateAuthority({
    dataDir: options.dataDir,
    ...(options.caDir ? { caDir: options.caDir } : {}),
    clock,
  });
  if (options.caDir) shareHostKey(options.caDir, options.dataDir);
  const host = openHostIdentity({
    dataDir: options.dataDir,
    ca,
    clock,
    ...(options.hostName ? { hostName: options.hostName } : {}),
  });
  const enrollment = createEnrollment({
    ca,
    tokens: fileTokenStore(join(options.dataDir, "pki", "tokens.json"), clock),
    clusterExists: options.clusterExists,
    clock,
    ...(options.agentCertificateTtlMs ? { certificateTtlMs: options.agentCertificateTtlMs } : {}),
  });
  return { ca, host, enrollment };
}

/**
 * Replicas of one hub (docs/ha.md) must also share the SSH host key: an agent pins the hub's
 * certificate and accepts only the key it certifies, so a standby with a key of its own would be
 * refused when it takes the lead. A `host.key` in the CA's folder (the mounted Secret) is that
 * shared key: it replaces the data dir's. Without one, each hub keeps its own (one hub).
 */
function shareHostKey(caDir: string, dataDir: string): void {
  const pki = join(dataDir, "pki");
  const shared = join(caDir, "host.key");
  if (resolve(caDir) === resolve(pki) || !existsSync(shared)) return;
  const key = readFileSync(shared, "utf8");
  const own = join(pki, "host.key");
  if (existsSync(own) && readFileSync(own, "utf8") === key) return;
  mkdirSync(pki, { recursive: true, mode: 0o700 });
  // The certificate over the old key is re-issued over this one by openHostIdentity.
  writeFileSync(own, key, { mode: 0o600 });
  writeFileSync(join(pki, "host.crt"), "", { mode: 0o644 });
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
    ...(clock ? { clock } : {}),
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
