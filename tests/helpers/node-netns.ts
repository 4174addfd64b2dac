// A stand-in for kwok nodes' network (kwok runs no pods, so a node's nodeserver needs somewhere to
// listen at the node's InternalIP): one network namespace holding the given IPs on its loopback,
// linked to the host by a veth and routed from it, with the fleet's API server (which listens on
// the host's loopback only) bridged into the namespace's loopback through a unix socket. Torn down
// with the test: bridges stopped, routes, link and namespace removed.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Test } from "tap";
import { stopChild } from "./stop-child.ts";
import { onKube, waitFor } from "./wait-for.ts";

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: "utf8", stdio: "pipe" });

export interface NodeNetns {
  /** The namespace's name, for `ip netns exec`. */
  netns: string;
  /** A temp dir removed at teardown (the bridge's socket is in it). */
  dir: string;
}

/**
 * `prefix` (4 letters at most) names the namespace and links; `ips` go on its loopback; `server`
 * is the API server URL whose port is bridged in.
 */
export async function nodeNetns(t: Test, prefix: string, ips: string[], server: string): Promise<NodeNetns> {
  const id = randomBytes(3).toString("hex");
  const netns = `${prefix}${id}`;
  const [hostIf, podIf] = [`${prefix}${id}h`, `${prefix}${id}p`];
  const link = `10.${200 + ((randomBytes(1)[0] ?? 0) % 50)}.${randomBytes(1)[0] ?? 0}`;
  const dir = mkdtempSync(path.join(tmpdir(), `rlark-${prefix}-`));
  const children: ChildProcess[] = [];
  t.teardown(async () => {
    for (const child of children.reverse()) await stopChild(child);
    for (const cmd of [
      ...ips.map((ip) => ["ip", "route", "del", `${ip}/32`, "via", `${link}.2`]),
      ["ip", "link", "del", hostIf],
      ["ip", "netns", "del", netns],
    ])
      try {
        sh(cmd[0] as string, cmd.slice(1));
      } catch {}
    rmSync(dir, { recursive: true, force: true });
  });
  sh("ip", ["netns", "add", netns]);
  sh("ip", ["link", "add", hostIf, "type", "veth", "peer", "name", podIf]);
  sh("ip", ["link", "set", podIf, "netns", netns]);
  sh("ip", ["addr", "add", `${link}.1/30`, "dev", hostIf]);
  sh("ip", ["link", "set", hostIf, "up"]);
  const inNs = (args: string[]) => sh("ip", ["-n", netns, ...args]);
  inNs(["link", "set", "lo", "up"]);
  inNs(["addr", "add", `${link}.2/30`, "dev", podIf]);
  for (const ip of ips) inNs(["addr", "add", `${ip}/32`, "dev", "lo"]);
  inNs(["link", "set", podIf, "up"]);
  inNs(["route", "add", "default", "via", `${link}.1`]);
  for (const ip of ips) sh("ip", ["route", "add", `${ip}/32`, "via", `${link}.2`]);

  const apiPort = new URL(server).port;
  const bridge = path.join(dir, "api.sock");
  const spawnQuiet = (cmd: string, args: string[]) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "ignore", "pipe"] });
    child.stderr?.resume();
    children.push(child);
  };
  spawnQuiet("socat", [`UNIX-LISTEN:${bridge},fork`, `TCP:127.0.0.1:${apiPort}`]);
  await waitFor("the API bridge's socket", () => existsSync(bridge), onKube);
  spawnQuiet("ip", [
    "netns",
    "exec",
    netns,
    "socat",
    `TCP-LISTEN:${apiPort},bind=127.0.0.1,fork,reuseaddr`,
    `UNIX-CONNECT:${bridge}`,
  ]);
  return { netns, dir };
}
