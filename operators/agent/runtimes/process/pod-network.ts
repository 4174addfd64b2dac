// The network of a process-runtime pod whose Task is in a Domain (docs/networking.md): its own
// network namespace, a veth pair to the host (a /30 cut from the runtime's link range: the host
// end .1, the pod end .2, which is the pod's podIP), `rlark-net init` run inside (the nat
// REDIRECT of the Domain's CIDR to the sidecar), and a prelude that starts `rlark sidecar` as an
// unprivileged uid in the pod's process group before the pod's own command, which then runs as
// its Task's uid (pod-users.ts): as root it could flush its REDIRECT, enter the host's namespaces
// or reach the nodeserver's socket, and the namespace would not confine it. The namespace lives
// as long as the pod (restarts of a Deployment reuse it); it is removed when the pod is, and a
// runtime that opens removes what an earlier one left without a pod record (a crash).
//
// Names carry a tag of the runtime's state dir, so two runtimes on one machine (two "clusters")
// never touch each other's: namespaces `rlark-<tag>-<pod>`, host links `rk<tag><pod>h`.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, chownSync, copyFileSync, mkdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { connectInNetns } from "../shared/netns-connect.ts";

export interface PodNetworkOptions {
  /** IPv4 range the pods' /30 links are cut from, e.g. 10.213.0.0/16: it must not be routed here. */
  linkCidr: string;
  /** The rlark-net binary; copied into `runDir` where the sidecar's uid can run it. */
  rlarkNet: string;
  /** How to run `rlark sidecar`: argv without the subcommand (e.g. [node, main.js]). */
  rlark: readonly string[];
  /** The nodeserver's directory (its nodeserver.sock), open to the sidecars' uid. */
  runDir: string;
  /** The sidecar's uid and gid. Default 1337, the uid the REDIRECT exempts. */
  sidecarUid?: number;
  /** PATH of the sidecar. Default the agent's. */
  path?: string;
}

/** What a pod's record keeps of its network, to reuse it on restarts and remove it at the end. */
export interface PodNetwork {
  netns: string;
  hostIf: string;
  hostIP: string;
  localIP: string;
  /** The pod's virtual IP in its Domain, on its loopback once the agent knows it. */
  virtualIP?: string;
}

export const OUTBOUND_PORT = 15001;
export const INBOUND_PORT = 5700;
/** The sidecar's outbound port listening, as a line of /proc/net/tcp shows it. */
export const OUTBOUND_LISTENING = `:${OUTBOUND_PORT.toString(16).toUpperCase().padStart(4, "0")} 00000000:0000 0A`;
/** The pod's command waits at most this long (tenths of a second) for its sidecar to listen. */
const SIDECAR_WAIT_TENTHS = 300;

function run(cmd: string, args: readonly string[], env?: NodeJS.ProcessEnv): string {
  try {
    return execFileSync(cmd, args, {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      ...(env ? { env } : {}),
    });
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? "").trim();
    throw new Error(`${cmd} ${args.join(" ")}: ${stderr || (error as Error).message}`);
  }
}

function tryRun(cmd: string, args: readonly string[]): void {
  try {
    run(cmd, args);
  } catch {
    // already gone
  }
}

const hash = (text: string, length: number) =>
  createHash("sha256").update(text).digest("hex").slice(0, length);

function ipInt(ip: string): number {
  return ip.split(".").reduce((n, o) => n * 256 + Number(o), 0);
}
function intIp(n: number): string {
  return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join(".");
}

/** Parses `a.b.c.d/len` (len 8..29: at least two /30 links), or throws naming the value. */
export function parseLinkCidr(cidr: string): { base: number; links: number } {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr);
  const octets = m?.slice(1, 5).map(Number) ?? [];
  const len = Number(m?.[5]);
  if (!m || octets.some((o) => o > 255) || len < 8 || len > 29)
    throw new Error(`link CIDR ${JSON.stringify(cidr)} is not an IPv4 a.b.c.d/len with len from 8 to 29`);
  const size = 2 ** (32 - len);
  const base = ipInt(octets.join("."));
  return { base: base - (base % size), links: size / 4 };
}

const shellQuote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

export class PodNetworks {
  readonly #options: PodNetworkOptions;
  readonly #tag: string;
  readonly #range: { base: number; links: number };
  /** Links of this runtime's live pods, by host IP. */
  readonly #inUse = new Set<string>();
  #helperPath: string | undefined;

  constructor(options: PodNetworkOptions, stateDir: string) {
    this.#options = options;
    this.#range = parseLinkCidr(options.linkCidr);
    this.#tag = hash(stateDir, 4);
  }

  /** Marks the networks of adopted pods as taken and removes every other one of this runtime's. */
  sweep(kept: readonly PodNetwork[]): { netns: string[]; links: string[] } {
    for (const n of kept) this.#inUse.add(n.hostIP);
    const keepNs = new Set(kept.map((n) => n.netns));
    const keepIf = new Set(kept.map((n) => n.hostIf));
    const removed = { netns: [] as string[], links: [] as string[] };
    const prefix = `rlark-${this.#tag}-`;
    for (const line of run("ip", ["netns", "list"]).split("\n")) {
      const name = line.split(" ")[0] ?? "";
      if (!name.startsWith(prefix) || keepNs.has(name)) continue;
      this.#removeNetns(name);
      removed.netns.push(name);
    }
    for (const line of run("ip", ["-o", "link", "show"]).split("\n")) {
      const name = /^\d+: ([^:@]+)/.exec(line)?.[1];
      if (!name?.startsWith(`rk${this.#tag}`) || keepIf.has(name)) continue;
      tryRun("ip", ["link", "del", name]);
      removed.links.push(name);
    }
    return removed;
  }

  /**
   * The pod's network: `existing` when its namespace is still there, else a new one. Throws with
   * the failing command (not root, a taken range) after undoing what it made.
   */
  ensure(podKey: string, domainCidr: string, existing: PodNetwork | undefined): PodNetwork {
    if (existing && this.#netnsExists(existing.netns)) {
      this.#inUse.add(existing.hostIP);
      return existing;
    }
    if (existing) this.release(existing);
    const id = hash(`${podKey}/${Date.now()}/${Math.random()}`, 6);
    const { hostIP, localIP } = this.#allocate();
    const network: PodNetwork = {
      netns: `rlark-${this.#tag}-${id}`,
      hostIf: `rk${this.#tag}${id}h`,
      hostIP,
      localIP,
    };
    this.#inUse.add(hostIP);
    try {
      run("ip", ["netns", "add", network.netns]);
      this.#plumb(network, id, network.netns, `/run/netns/${network.netns}`, domainCidr);
    } catch (error) {
      this.release(network);
      throw error;
    }
    return network;
  }

  /**
   * The same link and REDIRECT into a network namespace another owns: a container's, entered by
   * the pid of its first process (docker runtime). `link` is the pair from {@link reserveLink},
   * made before the container so its labels can carry it. Throws with the failing command after
   * removing the link.
   */
  attach(link: PodNetwork, pid: number, domainCidr: string): void {
    const id = link.hostIf.slice(2 + this.#tag.length, -1);
    try {
      this.#plumb(link, id, String(pid), `/proc/${pid}/ns/net`, domainCidr);
    } catch (error) {
      this.releaseLink(link);
      throw error;
    }
  }

  /** A free /30 and the names of its host link, taken until {@link releaseLink}. */
  reserveLink(): PodNetwork {
    this.#helper();
    const id = hash(`${Date.now()}/${Math.random()}`, 6);
    const { hostIP, localIP } = this.#allocate();
    this.#inUse.add(hostIP);
    return { netns: "", hostIf: `rk${this.#tag}${id}h`, hostIP, localIP };
  }

  /** Gives a reserved or attached link back (its namespace is its owner's to remove). */
  releaseLink(link: PodNetwork): void {
    tryRun("ip", ["link", "del", link.hostIf]);
    this.#inUse.delete(link.hostIP);
  }

  /** Marks links of pods found running (an adopting runtime) as taken. */
  keepLinks(links: readonly PodNetwork[]): void {
    for (const link of links) this.#inUse.add(link.hostIP);
  }

  /**
   * The veth pair into the namespace `target` (a name or a pid for `ip link set netns`, entered
   * at `path`), the pod's addresses and default route, and `rlark-net init` inside.
   */
  #plumb(network: PodNetwork, id: string, target: string, path: string, domainCidr: string): void {
    const rlarkNet = this.#helper();
    const podIf = `rk${this.#tag}${id}p`;
    const inPod = (args: string[]) => run("nsenter", [`--net=${path}`, "ip", ...args]);
    run("ip", ["link", "add", network.hostIf, "type", "veth", "peer", "name", podIf]);
    run("ip", ["link", "set", podIf, "netns", target]);
    run("ip", ["addr", "add", `${network.hostIP}/30`, "dev", network.hostIf]);
    run("ip", ["link", "set", network.hostIf, "up"]);
    inPod(["link", "set", podIf, "name", "eth0"]);
    inPod(["link", "set", "lo", "up"]);
    inPod(["addr", "add", `${network.localIP}/30`, "dev", "eth0"]);
    inPod(["link", "set", "eth0", "up"]);
    // The host is the pod's way out: the Domain's range (caught by the REDIRECT before it is
    // routed) and this machine's own addresses.
    inPod(["route", "add", "default", "via", network.hostIP]);
    run("nsenter", [`--net=${path}`, rlarkNet, "init"], {
      PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin",
      RLARK_DOMAIN_CIDR: domainCidr,
      RLARK_SIDECAR_UID: String(this.#uid()),
      RLARK_OUTBOUND_PORT: String(OUTBOUND_PORT),
    });
  }

  /** Puts the pod's virtual IP on its loopback (replacing the one it had, if another). */
  assignVirtualIP(network: PodNetwork, ip: string, path = `/run/netns/${network.netns}`): void {
    const inPod = (args: string[]) => [`--net=${path}`, "ip", ...args];
    if (network.virtualIP && network.virtualIP !== ip)
      tryRun("nsenter", inPod(["addr", "del", `${network.virtualIP}/32`, "dev", "lo"]));
    run("nsenter", inPod(["addr", "replace", `${ip}/32`, "dev", "lo"]));
  }

  /** Ends whatever still runs in the pod's namespace and removes it with its veth pair. */
  release(network: PodNetwork): void {
    this.#removeNetns(network.netns);
    tryRun("ip", ["link", "del", network.hostIf]);
    this.#inUse.delete(network.hostIP);
  }

  /** The command that puts what follows into the pod's namespace. */
  enter(network: PodNetwork): string[] {
    return ["nsenter", `--net=/run/netns/${network.netns}`];
  }

  /**
   * What runs an access session's program: in the pod's namespace, then `asUser` (the Task's
   * user, pod-users.ts; nothing when the pod runs as the agent's).
   */
  sessionPrefix(network: PodNetwork, asUser: readonly string[] = []): string[] {
    return [...this.enter(network), ...asUser];
  }

  /**
   * A stream to `port` on the pod's own loopback (an access port-forward): `rlark-net connect`
   * in the pod's namespace relays it over its stdin and stdout (as the agent's user: the helper
   * lies where the pods' user may not go, and a loopback connection is the same from any uid).
   */
  connect(network: PodNetwork, port: number): Promise<Duplex> {
    return connectInNetns(this.enter(network), this.#helper(), port);
  }

  /**
   * The command line that runs `argv` in the pod: it starts the sidecar in the background (its
   * output goes to the pod's log), waits until the sidecar's outbound port listens (at most 30 s)
   * so the pod's first connections are caught, then becomes `argv`.
   */
  podCommand(
    pod: { namespace: string; name: string },
    argv: readonly string[],
    asUser: readonly string[] = [],
  ): string[] {
    const uid = String(this.#uid());
    const sidecar = [
      "env",
      "-i",
      `PATH=${this.#options.path ?? process.env.PATH ?? "/usr/bin:/bin"}`,
      "HOME=/",
      `RLARK_NET_BIN=${join(this.#options.runDir, "rlark-net")}`,
      `RLARK_POD_NAME=${pod.name}`,
      `RLARK_POD_NAMESPACE=${pod.namespace}`,
      `RLARK_NODESERVER_SOCKET=${join(this.#options.runDir, "nodeserver.sock")}`,
      `RLARK_OUTBOUND_PORT=${OUTBOUND_PORT}`,
      `RLARK_INBOUND_PORT=${INBOUND_PORT}`,
      "setpriv",
      `--reuid=${uid}`,
      `--regid=${uid}`,
      "--clear-groups",
      "--no-new-privs",
      ...this.#options.rlark,
      "sidecar",
    ];
    const prelude = [
      `${sidecar.map(shellQuote).join(" ")} </dev/null &`,
      "i=0",
      `while [ $i -lt ${SIDECAR_WAIT_TENTHS} ] && ! grep -q '${OUTBOUND_LISTENING}' /proc/net/tcp; do sleep 0.1; i=$((i+1)); done`,
      ["exec", ...asUser.map(shellQuote), '"$@"'].join(" "),
    ].join("\n");
    return ["/bin/sh", "-c", prelude, "rlark-pod", ...argv];
  }

  /**
   * rlark-net in the run dir (the agent's own copy may lie where the sidecar's uid cannot read),
   * copied once per runtime so an upgraded agent brings its own.
   */
  #helper(): string {
    if (this.#helperPath) return this.#helperPath;
    const { runDir, rlarkNet } = this.#options;
    const target = join(runDir, "rlark-net");
    mkdirSync(runDir, { recursive: true, mode: 0o755 });
    if (process.getuid?.() === 0) {
      // Only root and the sidecars' group may enter: the socket answers whoever reaches it in a
      // pod's name (and hands out the pods' :5700 keys), so the pods' own users must not.
      chownSync(runDir, 0, this.#uid());
      chmodSync(runDir, 0o750);
    }
    const temporary = `${target}.${process.pid}.tmp`;
    copyFileSync(rlarkNet, temporary);
    chmodSync(temporary, 0o755);
    renameSync(temporary, target);
    this.#helperPath = target;
    return target;
  }

  #uid(): number {
    return this.#options.sidecarUid ?? 1337;
  }

  #netnsExists(name: string): boolean {
    return run("ip", ["netns", "list"])
      .split("\n")
      .some((line) => line.split(" ")[0] === name);
  }

  #removeNetns(name: string): void {
    try {
      for (const pid of run("ip", ["netns", "pids", name]).split("\n").filter(Boolean))
        try {
          process.kill(Number(pid), "SIGKILL");
        } catch {
          // ended meanwhile
        }
    } catch {
      // no such namespace
    }
    tryRun("ip", ["netns", "del", name]);
  }

  #allocate(): { hostIP: string; localIP: string } {
    const onHost = run("ip", ["-4", "-o", "addr", "show"]);
    for (let i = 0; i < this.#range.links; i++) {
      const hostIP = intIp(this.#range.base + i * 4 + 1);
      // another runtime's pod (a second "cluster" on this machine) may hold it
      if (this.#inUse.has(hostIP) || onHost.includes(` ${hostIP}/`)) continue;
      return { hostIP, localIP: intIp(this.#range.base + i * 4 + 2) };
    }
    throw new Error(`no free /30 left in the link range ${this.#options.linkCidr}`);
  }
}
