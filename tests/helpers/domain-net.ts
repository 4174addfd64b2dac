// A Domain data-path test bed on this machine (as root): a hub with its domain relay, one
// `rlark nodeserver` process per "cluster" (own socket dir, peers.json written here), and "pods"
// that are network namespaces with a veth to the host, `rlark-net init` inside and an
// `rlark sidecar` running as uid 1337. Names carry a per-bed prefix; close() removes everything.

import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  copyFileSync,
  mkdtempSync,
  openSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Domain, DomainPeer, PeersState } from "../../operators/api/index.ts";
import { namespaceFor } from "../../operators/api/index.ts";
import { DomainCertificates } from "../../operators/controllers/domain/index.ts";
import { type Hub, startHub } from "../../operators/hub/index.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { claimNumber } from "./claim-number.ts";
import { relayEngineOptions } from "./relay-engine.ts";
import { stopChild } from "./stop-child.ts";
import { waitFor } from "./wait-for.ts";

const execFileAsync = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");
const node = path.join(root, "node_modules/.bin/node");
const main = path.join(root, "operators/cli/main.ts");

export function rlarkNetBinary(): string {
  return execFileSync(path.join(root, "hack/network/build-rlark-net"), { encoding: "utf8" }).trim();
}

export function sh(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

export interface BedPod {
  name: string;
  domain?: string;
  cluster: string;
  vip?: string;
  localIP: string;
  netns: string;
  sidecar?: ChildProcess;
  /** Runs a command inside the pod's namespace (as root, like the pod's program). */
  exec(cmd: string, args: string[]): string;
  /** The same without blocking this process, whose hub relays the pod's traffic. */
  run(cmd: string, args: string[]): Promise<string>;
  spawn(cmd: string, args: string[]): ChildProcess;
}

export interface BedDomain {
  name: string;
  cidr: string;
  prefixLen: number;
  /** The cluster's certificate and key for the Domain, as its DomainPeer carries them. */
  creds(cluster: string): { certPem: string; keyPem: string };
}

export class DomainBed {
  /** Names of namespaces and links: `<namePrefix><4 hex>` (rn unless a test asks for its own). */
  readonly prefix: string;
  readonly dir = mkdtempSync(path.join(tmpdir(), "rlark-domain-net-"));
  /** 10.<subnet>.0.0/16 holds the bed's links; 200 and up are other helpers' (domain-clusters). */
  readonly #subnetClaim = claimNumber("domain-bed-subnet", 16, 200);
  readonly subnet = this.#subnetClaim.value;
  hub!: Hub;
  readonly pods: BedPod[] = [];
  readonly domains = new Map<string, BedDomain>();
  /** Per cluster: the nodeserver process (the network bench reads its CPU time). */
  readonly nodeservers = new Map<string, ChildProcess>();
  /** A copy the sidecars (uid 1337) can run: $HOME/.cache may be closed to them. */
  readonly rlarkNet = path.join(this.dir, "rlark-net");
  #certificates!: DomainCertificates;
  #children = new Set<ChildProcess>();
  #podIndex = 0;

  constructor(namePrefix = "rn") {
    this.prefix = `${namePrefix}${randomBytes(2).toString("hex")}`;
  }

  async start(): Promise<void> {
    // The sidecars (uid 1337) reach the nodeserver sockets under it.
    chmodSync(this.dir, 0o755);
    copyFileSync(rlarkNetBinary(), this.rlarkNet);
    this.hub = await startHub({
      dataDir: path.join(this.dir, "hub"),
      http: "127.0.0.1:0",
      ssh: "127.0.0.1:0",
      domainRelay: "127.0.0.1:0",
      ...relayEngineOptions(),
      controllers: () => [],
      logger: silentLogger,
    });
    this.#certificates = new DomainCertificates({
      pki: this.hub.pki.ca,
      dataDir: path.join(this.dir, "hub"),
    });
  }

  socketDir(cluster: string): string {
    return path.join(this.dir, `ns-${cluster}`);
  }

  async domain(name: string, cidr: string): Promise<BedDomain> {
    const prefixLen = Number(cidr.split("/")[1]);
    const domain: BedDomain = {
      name,
      cidr,
      prefixLen,
      creds: (cluster) => this.#certificates.ensure(name, cluster),
    };
    this.domains.set(name, domain);
    await this.hub.store.create<Domain>({
      apiVersion: "rlinf.io/v1alpha1",
      kind: "Domain",
      metadata: { name },
      spec: { cidr },
    } as Domain);
    return domain;
  }

  /** `args`: more flags of `rlark nodeserver` (e.g. --data-engine go). */
  startNodeserver(cluster: string, args: string[] = []): ChildProcess {
    const dir = this.socketDir(cluster);
    execFileSync("mkdir", ["-p", dir]);
    const child = spawn(
      node,
      [
        main,
        "nodeserver",
        "--socket-dir",
        dir,
        "--node",
        `${this.prefix}-${cluster}`,
        // RLARK_TEST_DATA_ENGINE=go: the bytes between clusters in rlark-net nodeserver-data.
        ...(process.env.RLARK_TEST_DATA_ENGINE === "go" ? ["--data-engine", "go"] : []),
        ...args,
      ],
      {
        // RLARK_BED_NODE_OPTIONS profiles the nodeservers (e.g. "--cpu-prof --cpu-prof-dir=DIR").
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          NODE_OPTIONS: process.env.RLARK_BED_NODE_OPTIONS ?? "",
          // This run's rlark-net (its data engine): the shared cache may hold another checkout's.
          RLARK_NET_BIN: this.rlarkNet,
        },
        stdio: ["ignore", "ignore", process.env.RLARK_BED_LOGS ? "inherit" : "ignore"],
      },
    );
    this.#children.add(child);
    child.once("exit", () => this.#children.delete(child));
    this.nodeservers.set(cluster, child);
    return child;
  }

  /** A pod: a namespace with a veth to the host; with a domain, the REDIRECT and a sidecar. */
  async pod(name: string, cluster: string, domainName?: string, vip?: string): Promise<BedPod> {
    const i = ++this.#podIndex;
    const netns = `${this.prefix}-${name}`;
    const hostIf = `${this.prefix}h${i}`;
    const podIf = `${this.prefix}p${i}`;
    const hostIP = `10.${this.subnet}.${i}.1`;
    const localIP = `10.${this.subnet}.${i}.2`;
    sh("ip", ["netns", "add", netns]);
    const pod: BedPod = {
      name,
      cluster,
      localIP,
      netns,
      exec: (cmd, args) => sh("ip", ["netns", "exec", netns, cmd, ...args]),
      run: async (cmd, args) =>
        (
          await execFileAsync("ip", ["netns", "exec", netns, cmd, ...args], {
            encoding: "utf8",
            maxBuffer: 64 * 1024 * 1024,
          })
        ).stdout,
      spawn: (cmd, args) => {
        const child = spawn("ip", ["netns", "exec", netns, cmd, ...args], {
          stdio: ["ignore", "pipe", "pipe"],
        });
        this.#children.add(child);
        child.once("exit", () => this.#children.delete(child));
        return child;
      },
    };
    this.pods.push(pod);
    sh("ip", ["link", "add", hostIf, "type", "veth", "peer", "name", podIf]);
    sh("ip", ["link", "set", podIf, "netns", netns]);
    sh("ip", ["addr", "add", `${hostIP}/30`, "dev", hostIf]);
    sh("ip", ["link", "set", hostIf, "up"]);
    pod.exec("ip", ["link", "set", "lo", "up"]);
    pod.exec("ip", ["addr", "add", `${localIP}/30`, "dev", podIf]);
    pod.exec("ip", ["link", "set", podIf, "up"]);
    // Pods reach each other's local IPs through the host, as in a Kubernetes pod network:
    // forwarding on this pod's host-side veth only (the host's global setting is left alone).
    sh("sysctl", ["-qw", `net.ipv4.conf.${hostIf}.forwarding=1`]);
    pod.exec("ip", ["route", "add", `10.${this.subnet}.0.0/16`, "via", hostIP]);
    if (!domainName || !vip) return pod;
    const domain = this.domains.get(domainName) as BedDomain;
    pod.domain = domainName;
    pod.vip = vip;
    // The pod's own virtual IP, for programs that bind it; the Domain's range on the veth, so a
    // connect() gets past routing to the nat REDIRECT.
    pod.exec("ip", ["addr", "add", `${vip}/32`, "dev", "lo"]);
    pod.exec("ip", ["route", "add", domain.cidr, "dev", podIf]);
    execFileSync("ip", ["netns", "exec", netns, this.rlarkNet, "init"], {
      env: {
        ...process.env,
        RLARK_DOMAIN_CIDR: domain.cidr,
        RLARK_SIDECAR_UID: "1337",
        RLARK_OUTBOUND_PORT: "15001",
      },
      stdio: "ignore",
    });
    return pod;
  }

  /** The pod's sidecar; its output (rlark-net's refusals among it) goes to `log` when given. */
  startSidecar(pod: BedPod, log?: string): ChildProcess {
    const out = log ? openSync(log, "a") : undefined;
    const child = spawn(
      "ip",
      [
        "netns",
        "exec",
        pod.netns,
        "setpriv",
        "--reuid",
        "1337",
        "--regid",
        "1337",
        "--clear-groups",
        node,
        main,
        "sidecar",
      ],
      {
        // Not the test's environment: tap's NODE_OPTIONS would make the sidecar write into .tap/.
        env: {
          PATH: process.env.PATH,
          HOME: "/tmp",
          RLARK_NET_BIN: this.rlarkNet,
          RLARK_POD_NAME: pod.name,
          RLARK_POD_NAMESPACE: "default",
          RLARK_NODESERVER_SOCKET: path.join(this.socketDir(pod.cluster), "nodeserver.sock"),
          RLARK_OUTBOUND_PORT: "15001",
          RLARK_INBOUND_PORT: "5700",
        },
        stdio: ["ignore", "ignore", out ?? (process.env.RLARK_BED_LOGS ? "inherit" : "ignore")],
      },
    );
    if (out !== undefined) closeSync(out);
    this.#children.add(child);
    child.once("exit", () => this.#children.delete(child));
    pod.sidecar = child;
    return child;
  }

  /** Allocations in Domain status, DomainPeers per cluster, peers.json per cluster. */
  async publish(): Promise<void> {
    const store = this.hub.store;
    for (const domain of this.domains.values()) {
      const members = this.pods.filter((p) => p.domain === domain.name);
      const current = (await store.get<Domain>("Domain", "", domain.name)) as Domain;
      await store.updateStatus<Domain>({
        ...current,
        status: {
          ipAllocations: members.map((p) => ({
            ip: p.vip as string,
            job: "bed",
            task: "t",
            pod: p.name,
            cluster: p.cluster,
          })),
        },
      });
      for (const cluster of new Set(members.map((p) => p.cluster))) {
        const ns = namespaceFor(cluster);
        const spec = {
          cert: domain.creds(cluster).certPem,
          key: domain.creds(cluster).keyPem,
          prefixLen: domain.prefixLen,
          pods: this.#peerPods(domain.name, cluster),
        };
        const existing = await store.get<DomainPeer>("DomainPeer", ns, domain.name);
        if (existing) await store.update<DomainPeer>({ ...existing, spec });
        else
          await store.create<DomainPeer>({
            apiVersion: "rlinf.io/v1alpha1",
            kind: "DomainPeer",
            metadata: { name: domain.name, namespace: ns },
            spec,
          });
      }
    }
    for (const cluster of new Set(this.pods.map((p) => p.cluster))) this.writePeers(cluster);
  }

  #peerPods(domain: string, cluster: string) {
    return this.pods
      .filter((p) => p.domain === domain && p.cluster === cluster)
      .map((p) => ({
        name: p.name,
        namespace: "default",
        ip: p.vip as string,
        localIP: p.localIP,
        globalNamespace: namespaceFor(cluster),
      }));
  }

  writePeers(cluster: string): void {
    const state: PeersState = {
      globalNamespace: namespaceFor(cluster),
      hub: { address: this.hub.domainRelayAddress as string, caPem: this.hub.pki.ca.certPem },
      domains: [...this.domains.values()]
        .filter((d) => this.pods.some((p) => p.domain === d.name && p.cluster === cluster))
        .map((d) => ({
          domain: d.name,
          cidr: d.cidr,
          cert: d.creds(cluster).certPem,
          key: d.creds(cluster).keyPem,
          prefixLen: d.prefixLen,
          pods: this.#peerPods(d.name, cluster),
        })),
    };
    const file = path.join(this.socketDir(cluster), "peers.json");
    writeFileSync(`${file}.tmp`, JSON.stringify(state));
    renameSync(`${file}.tmp`, file);
  }

  /** Waits until every sidecar has learnt its IP and every nodeserver holds its reverse links. */
  async ready(): Promise<void> {
    for (const pod of this.pods.filter((p) => p.sidecar))
      await waitFor(
        `sidecar of ${pod.name} listening`,
        () => {
          try {
            return (
              pod.exec("ss", ["-Htln", "sport = :15001"]).includes("15001") &&
              pod.exec("ss", ["-Htln", "sport = :5700"]).includes("5700")
            );
          } catch {
            return false;
          }
        },
        { attempts: 400, everyMs: 50 },
      );
    const wanted = new Set(
      this.pods.filter((p) => p.domain).map((p) => `${p.domain}|${namespaceFor(p.cluster)}`),
    );
    await waitFor(
      "every cluster's reverse link at the hub",
      () => {
        const have = new Set(
          this.hub.domainRelay?.stats().reverseLinks.map((l) => `${l.domain}|${l.globalNamespace}`),
        );
        return [...wanted].every((w) => have.has(w));
      },
      { attempts: 400, everyMs: 50 },
    );
  }

  async close(): Promise<void> {
    const children = [...this.#children];
    await Promise.all(children.map((c) => stopChild(c)));
    for (const pod of this.pods) {
      try {
        for (const pid of sh("ip", ["netns", "pids", pod.netns]).split("\n").filter(Boolean))
          process.kill(Number(pid), "SIGKILL");
      } catch {}
      try {
        sh("ip", ["netns", "del", pod.netns]);
      } catch {}
    }
    await this.hub?.stop();
    rmSync(this.dir, { recursive: true, force: true });
    this.#subnetClaim.release();
  }
}
