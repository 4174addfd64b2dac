import type { Clock } from "../clock.ts";
import { PkiError, sshPublicKeyBlob, verifyCertificate } from "../pki/index.ts";

/**
 * The agent's check of the hub: the host-key certificate is signed by the trusted CA, is for
 * role hub, and certifies exactly the key the hub used in this SSH handshake. A stolen copy of
 * the hub's certificate is useless without the hub's host key.
 */
export function checkHubIdentity(options: {
  caCertPem: string;
  hostCertPem: string;
  handshakeHostKey: Buffer | undefined;
  clock: Pick<Clock, "now">;
}): void {
  const id = verifyCertificate(
    options.hostCertPem,
    { role: "hub" },
    { caCertPem: options.caCertPem, clock: options.clock },
  );
  if (!options.handshakeHostKey || !sshPublicKeyBlob(id.publicKeyPem).equals(options.handshakeHostKey)) {
    throw new PkiError(
      "untrusted",
      "the hub's host-key certificate does not certify the key of this SSH handshake",
    );
  }
}

/**
 * `--hub a:2222,b:2222`: the addresses of several hubs (replicas of which one leads and accepts
 * agents). The agent tries them in turn, moving on whenever a connection fails or drops.
 */
export function parseHubAddresses(hub: string, defaultPort = 2222): { host: string; port: number }[] {
  return hub.split(",").map((one) => parseHubAddress(one, defaultPort));
}

export function parseHubAddress(hub: string, defaultPort = 2222): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d+))?$/.exec(hub.trim());
  const host = m?.[1] ?? m?.[2];
  const port = m?.[3] ? Number(m[3]) : defaultPort;
  if (!host || !(port > 0 && port < 65536))
    throw new Error(`--hub ${JSON.stringify(hub)}: expected host:port`);
  return { host, port };
}
