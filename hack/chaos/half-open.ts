// A half-open tunnel: an agent's SSH connection to its hub made silent without a close, as a
// dropped link (a netns veth taken away, a cable pulled) leaves it. The connection's packets are
// dropped both ways by two iptables rules on its 4-tuple (the soak's parts all talk over lo, where
// no link of their own can be dropped), so neither end sees a FIN or a RST: only their keepalives
// can tell. The rules go when the fault ends, so the soak's count of iptables rules is unchanged.
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface Tunnel {
  local: number;
  remote: number;
}

/** The established TCP connection of process `pid` to one of `ports` (127.0.0.1), if any. */
export async function tunnelOf(pid: number, ports: number[]): Promise<Tunnel | undefined> {
  const { stdout } = await run("ss", ["-tnpH", "state", "established"]);
  for (const line of stdout.split("\n")) {
    if (!line.includes(`pid=${pid},`)) continue;
    const [local, peer] = line.trim().split(/\s+/).slice(2, 4);
    const localPort = Number(local?.split(":").at(-1));
    const peerPort = Number(peer?.split(":").at(-1));
    if (ports.includes(peerPort)) return { local: localPort, remote: peerPort };
  }
  return undefined;
}

const rules = (t: Tunnel) => [
  ["INPUT", "-i", "lo", "-p", "tcp", "--sport", String(t.local), "--dport", String(t.remote), "-j", "DROP"],
  ["INPUT", "-i", "lo", "-p", "tcp", "--sport", String(t.remote), "--dport", String(t.local), "-j", "DROP"],
];

/** Drops the tunnel's packets both ways until `heal` is called. */
export async function dropTunnel(t: Tunnel): Promise<() => Promise<void>> {
  for (const rule of rules(t)) await run("iptables", ["-w", "-I", ...rule]);
  return async () => {
    for (const rule of rules(t)) await run("iptables", ["-w", "-D", ...rule]).catch(() => undefined);
  };
}
