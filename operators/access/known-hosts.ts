import { sshPublicKeyLine } from "../lib/pki/index.ts";

/** The known_hosts line for the hub's SSH endpoint at host:port (OpenSSH brackets non-22 ports). */
export function knownHostsLine(host: string, port: number, hostKeyPem: string): string {
  const name = port === 22 ? host : `[${host}]:${port}`;
  return `${name} ${sshPublicKeyLine(hostKeyPem)}`;
}
