// Two (or more) process-runtime "clusters" on this machine, each a real `rlark agent` process
// enrolled on one real hub on git (in this process, with its domain relay), with the agent's
// Domain networking on: Domain pods in namespaces of their own, sidecars, the agents' nodeservers.
// Pods are found by a marker in their command line; programs run in a pod's network with
// nsenter. Needs root. Everything is stopped and removed at teardown.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  createWriteStream,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Test } from "tap";
import { type PodNetworkOptions, ProcessRuntime } from "../../operators/agent/runtimes/process/index.ts";
import type { Pod } from "../../operators/api/index.ts";
import { namespaceFor } from "../../operators/api/index.ts";
import type { Hub, HubOptions } from "../../operators/hub/index.ts";
import { jsonLogger } from "../../operators/lib/logger.ts";
import { rlarkNetPath } from "../../operators/network/index.ts";
import { claimNumber } from "./claim-number.ts";
import { rlarkNetBinary } from "./domain-net.ts";
import { type HubOnGit, startHubOnGit } from "./hub-on-git.ts";
import { clusterYaml } from "./job-yaml.ts";
import { relayEngineOptions } from "./relay-engine.ts";
import { onRealServers, waitFor } from "./wait-for.ts";

const execFileAsync = promisify(execFile);
const main = path.resolve(import.meta.dirname, "../../operators/cli/main.ts");

/** A Raw Deployment task held to `cluster`, running `script` under sh; `marker` finds its pod. */
export const podTaskYaml = (
  name: string,
  cluster: string,
  script: string,
  marker: string,
) => `    - name: ${name}
      role: Actor
      agentType: Raw
      clusterSelector: { matchLabels: { region: ${cluster} } }
      raw:
        kind: Deployment
        command: ["sh", "-c", ${JSON.stringify(`${script} # ${marker}`)}]
`;

export interface ClusterAgent {
  cluster: string;
  stateDir: string;
  runDir: string;
  log: string;
  child: ChildProcess;
  linkCidr: string;
}

export interface DomainClustersOptions {
  /** More hub options (a dashboard, say). */
  hub?: Partial<HubOptions>;
  /** More command-line arguments of a cluster's agent, by cluster. */
  agentArgs?: Record<string, string[]>;
  /** Clusters whose Cluster says another runtime than process (give their agents its flags). */
  runtimes?: Record<string, "docker">;
  /** More of them made once the hub's relay listens (a proxy in front of it, say), appended. */
  beforeAgents?: (relay: string) => Promise<Record<string, string[]>>;
}

export class DomainClusters {
  /** Random per run: markers, node names and link ranges of parallel runs never meet. */
  readonly id = randomBytes(3).toString("hex");
  readonly dir = mkdtempSync(path.join(tmpdir(), "rlark-domain-clusters-"));
  readonly agents = new Map<string, ClusterAgent>();
  /** The hub's log (it runs in the test's process), kept across its restarts. */
  readonly hubLog = path.join(this.dir, "hub.log");
  running!: HubOnGit;
  relay = "";
  readonly #linkClaim = claimNumber("domain-clusters-link", 200, 250);
  readonly #linkBase = this.#linkClaim.value;
  readonly #token = new Map<string, string>();
  #agentArgs: Record<string, string[]> = {};

  get hub(): Hub {
    return this.running.hub;
  }

  marker(pod: string): string {
    return `rlark-dc-${this.id}-${pod}`;
  }

  static async start(
    t: Test,
    clusters: string[],
    files: Record<string, string>,
    options: DomainClustersOptions = {},
  ): Promise<DomainClusters> {
    rlarkNetBinary();
    const bed = new DomainClusters();
    bed.#agentArgs = options.agentArgs ?? {};
    t.teardown(() => bed.close());
    // The sidecars (uid 1337) reach the nodeserver sockets under it.
    chmodSync(bed.dir, 0o755);
    const all = {
      "clusters.yaml": clusters.map((c) => clusterYaml(c, options.runtimes?.[c])).join("---\n"),
      ...files,
    };
    const logger = jsonLogger("hub", createWriteStream(bed.hubLog, { flags: "a" }));
    bed.running = await startHubOnGit(t, {
      logger,
      ...options.hub,
      files: all,
      domainRelay: "127.0.0.1:0",
      ...relayEngineOptions(),
    });
    bed.relay = bed.hub.domainRelayAddress as string;
    for (const [cluster, args] of Object.entries((await options.beforeAgents?.(bed.relay)) ?? {}))
      bed.#agentArgs[cluster] = [...(bed.#agentArgs[cluster] ?? []), ...args];
    for (const cluster of clusters)
      await waitFor(
        `Cluster ${cluster} from git`,
        async () => (await bed.hub.store.get("Cluster", undefined, cluster)) !== undefined,
        onRealServers,
      );
    for (const cluster of clusters) {
      const { token } = await bed.hub.pki.enrollment.createToken({ cluster, ttlMs: 60_000 });
      bed.#token.set(cluster, token);
      bed.startAgent(cluster);
    }
    return bed;
  }

  /** Starts (or starts again, on the same state) the agent process of `cluster`. */
  startAgent(cluster: string): ClusterAgent {
    const stateDir = path.join(this.dir, `agent-${cluster}`);
    const runDir = path.join(this.dir, `run-${cluster}`);
    const log = path.join(this.dir, `agent-${cluster}.log`);
    const linkCidr =
      this.agents.get(cluster)?.linkCidr ??
      `10.${this.#linkBase}.${(Number.parseInt(this.id.slice(0, 2), 16) + this.agents.size * 16) % 256}.0/24`;
    const args = [
      main,
      "agent",
      "--hub",
      this.hub.sshAddress,
      "--state-dir",
      stateDir,
      "--node-name",
      `${this.id}-${cluster}`,
      "--nodeserver-dir",
      runDir,
      "--domain-relay",
      this.relay,
      "--pod-link-cidr",
      linkCidr,
      // RLARK_TEST_DATA_ENGINE=go: the nodeservers' bytes between clusters in rlark-net nodeserver-data.
      ...(process.env.RLARK_TEST_DATA_ENGINE === "go" ? ["--nodeserver-data-engine", "go"] : []),
      ...(this.#agentArgs[cluster] ?? []),
    ];
    const token = this.#token.get(cluster);
    if (token && !this.agents.has(cluster)) args.push("--token", token, "--ca-hash", this.hub.caFingerprint);
    const out = openSync(log, "a");
    // Not the test's environment: tap's NODE_OPTIONS would make the agent write into .tap/.
    const child = spawn(process.execPath, args, {
      // The rlark-net this run built (RLARK_CACHE may point at another than the agent would find).
      env: { PATH: process.env.PATH, HOME: process.env.HOME, RLARK_NET_BIN: rlarkNetBinary() },
      stdio: ["ignore", out, out],
    });
    const agent = { cluster, stateDir, runDir, log, child, linkCidr };
    this.agents.set(cluster, agent);
    return agent;
  }

  /** The last `bytes` of the hub's log and of each agent's: what a failed wait explains itself by. */
  logTails(bytes = 3000): string {
    const tail = (file: string) => {
      try {
        return readFileSync(file, "utf8").slice(-bytes);
      } catch (error) {
        return String(error);
      }
    };
    return [
      `hub log ends:\n${tail(this.hubLog)}`,
      ...[...this.agents.values()].map((a) => `${a.cluster}'s agent log ends:\n${tail(a.log)}`),
    ].join("\n");
  }

  /** SIGTERM, as a service manager stops it: its pods keep running for the next agent. */
  async stopAgent(cluster: string): Promise<void> {
    const { child } = this.agents.get(cluster) as ClusterAgent;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }

  /** The pod's virtual IP, as its Pod on the hub carries it. */
  async vip(cluster: string, marker: string): Promise<string> {
    const ip = await this.linkIP(marker);
    return waitFor(
      `the virtual IP of the pod of ${marker}`,
      async () => {
        const pods = await this.hub.store.list<Pod>("Pod", { namespace: namespaceFor(cluster) });
        return pods.items.find((p) => p.status?.podIP === ip)?.status?.domainIP;
      },
      onRealServers,
    );
  }

  /** The address of the pod's end of its veth. */
  async linkIP(marker: string): Promise<string> {
    const out = await this.run(marker, "ip", ["-4", "-o", "addr", "show", "dev", "eth0"]);
    const ip = / inet ([\d.]+)\//.exec(out)?.[1];
    if (!ip) throw new Error(`no address on eth0 in the pod of ${marker}: ${out}`);
    return ip;
  }

  /** The pid of the pod's shell (its command line holds `marker`), once it runs in its own network. */
  podPid(marker: string): Promise<number> {
    const ours = statSync("/proc/self/ns/net").ino;
    return waitFor(
      `the pod of ${marker} running in its own network`,
      () =>
        readdirSync("/proc")
          .filter((entry) => /^\d+$/.test(entry))
          .map(Number)
          .find((pid) => {
            try {
              const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
              return (
                cmdline.startsWith("sh\0-c\0") &&
                cmdline.includes(marker) &&
                statSync(`/proc/${pid}/ns/net`).ino !== ours
              );
            } catch {
              return false;
            }
          }),
      onRealServers,
    );
  }

  /** Runs a program in the network of the pod of `marker`, as its own programs run. */
  async run(marker: string, cmd: string, args: string[]): Promise<string> {
    const pid = await this.podPid(marker);
    return (
      await execFileAsync("nsenter", ["-t", String(pid), "-n", cmd, ...args], {
        encoding: "utf8",
        maxBuffer: 64 * 1024 * 1024,
      })
    ).stdout;
  }

  async spawn(marker: string, cmd: string, args: string[]): Promise<ChildProcess> {
    const pid = await this.podPid(marker);
    return spawn("nsenter", ["-t", String(pid), "-n", cmd, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  }

  /**
   * Stops the agents, then ends their pods as a runtime on each agent's state does (so their
   * namespaces and links go the way the product removes them).
   */
  async close(): Promise<void> {
    await Promise.all([...this.agents.keys()].map((c) => this.stopAgent(c)));
    for (const [cluster, agent] of this.agents) {
      const runtime = await ProcessRuntime.open({
        stateDir: path.join(agent.stateDir, "runtime"),
        nodeName: `${this.id}-${cluster}`,
        terminationGracePeriodMs: 2_000,
        podNetwork: { ...this.#podNetwork(agent.runDir), linkCidr: agent.linkCidr },
      });
      await runtime.stop({ terminatePods: true });
    }
    rmSync(this.dir, { recursive: true, force: true });
    this.#linkClaim.release();
  }

  #podNetwork(runDir: string): Omit<PodNetworkOptions, "linkCidr"> {
    return { rlarkNet: rlarkNetPath(), rlark: [process.execPath, main], runDir };
  }
}
