// Shared set-up for tunnel tests: a real CA in a temp dir, a real ssh2 hub on 127.0.0.1:0.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type CertificateAuthority,
  generateKeyPair,
  type HostIdentity,
  openCertificateAuthority,
  openHostIdentity,
} from "../../../operators/lib/pki/index.ts";
import {
  type AgentCredentials,
  type AgentSession,
  type ClusterState,
  createTunnelServer,
  type TunnelServer,
  type TunnelServerOptions,
} from "../../../operators/lib/tunnel/index.ts";

export const HOUR = 3600_000;

export async function tempDir(prefix = "rlark-tunnel-"): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export interface TunnelHub {
  dataDir: string;
  ca: CertificateAuthority;
  host: HostIdentity;
  server: TunnelServer;
  address: string;
  sessions: AgentSession[];
  states: Array<[string, ClusterState]>;
  credentialsFor(cluster: string, options?: { ttlMs?: number; ca?: CertificateAuthority }): AgentCredentials;
  restart(): Promise<void>;
}

/** A real tunnel server with its CA and host identity, recording the sessions it accepts. */
export async function startTunnelHub(
  overrides: Partial<TunnelServerOptions> = {},
  dataDir?: string,
  port = 0,
): Promise<TunnelHub> {
  const dir = dataDir ?? (await tempDir());
  const ca = openCertificateAuthority({ dataDir: dir });
  const host = openHostIdentity({ dataDir: dir, ca });
  const sessions: AgentSession[] = [];
  const states: Array<[string, ClusterState]> = [];
  const make = () =>
    createTunnelServer({
      hostKey: host.privateKeyPem,
      hostCert: host.certPem,
      ca,
      onAgentSession: (s) => sessions.push(s),
      onClusterState: (cluster, state) => states.push([cluster, state]),
      ...overrides,
    });
  const hub: TunnelHub = {
    dataDir: dir,
    ca,
    host,
    server: make(),
    address: "",
    sessions,
    states,
    credentialsFor(cluster, options = {}) {
      const keys = generateKeyPair();
      const issuer = options.ca ?? ca;
      const cert = issuer.issue({
        role: "agent",
        name: cluster,
        publicKey: keys.publicKeyPem,
        ttlMs: options.ttlMs ?? HOUR,
      });
      return { cluster, privateKeyPem: keys.privateKeyPem, certPem: cert.certPem, caCertPem: ca.certPem };
    },
    async restart() {
      const { port: p } = hub.server.address();
      await hub.server.close();
      hub.server = make();
      await hub.server.listen(p, "127.0.0.1");
    },
  };
  const addr = await hub.server.listen(port, "127.0.0.1");
  hub.address = `127.0.0.1:${addr.port}`;
  return hub;
}

export const helloInfo = {
  agentVersion: "0.1.0-test",
  bootId: "boot-1",
  runtime: "process" as const,
  capabilities: [{ name: "process-runtime", process: "RUNNING" as const, health: "READY" as const }],
};
