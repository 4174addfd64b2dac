// `up` / `down` / `status` for a local fleet of real Kubernetes control planes on loopback.
// Run it through the bash wrappers, which build the binaries first and hold a lock so that only
// one up or down works on a fleet folder at a time:
//
//   bash hack/kube/up [--clusters N] [--nodes K] [--real-nodes R] [--holder PID]
//   bash hack/kube/down [--keep] [--holder PID | --if-orphaned]
//   node hack/kube/fleet.ts status
//
// One etcd serves every cluster (a key prefix each); per cluster a kube-apiserver (own port, own
// CA, RBAC, an admin client certificate), kube-controller-manager, kube-scheduler and a kwok
// controller that plays the kubelets of K fake nodes, and with --real-nodes R, R real nodes (a
// containerd and a kubelet each, real-nodes.ts) that kwok leaves alone. State lives in the fleet folder
// ($RLARK_FLEET_DIR, `.cache/fleet/` by default): state.json records every PID with its start
// time so `down` stops exactly those processes; clusters.json lists `{name, kubeconfig, server}`.
// Test runs register as holders (`--holder`): the fleet stops when the last of them is done, so
// test runs in one checkout can share it; a fleet started by hand is left to a plain `down`.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { parseArgs } from "node:util";
import YAML from "yaml";
import { buildImageArchive } from "./images.ts";
import { KWOK_DEBUGGING_KINDS, kwokDebuggingCrds } from "./kwok-debugging.ts";
import {
  type Binaries,
  binaries,
  type ClusterEntry,
  fleetDir,
  kubeletBinary,
  readVersions,
  type Versions,
} from "./paths.ts";
import { type CertKey, makeCa, makeLeaf, rsaKeyPair } from "./pki.ts";
import {
  checkRealNodeHost,
  cleanupHostShared,
  cleanupRealNode,
  KWOK_NODE_SELECTOR,
  type RealNodeRecord,
  startRealNode,
} from "./real-nodes.ts";

const log = (msg: string): void => console.log(`fleet: ${msg}`);

// ---------------------------------------------------------------------------------------------
// processes

interface ProcRecord {
  name: string;
  pid: number;
  /** starttime from /proc/<pid>/stat: a recycled PID has another one, so it is never killed. */
  start: string;
  /** Stop order: higher tiers stop first (components, then apiservers, then etcd). */
  tier: number;
  log: string;
}

/** A process (a test run) using the fleet; the fleet stops when the last one leaves. */
interface Holder {
  pid: number;
  start: string;
}

interface State {
  clusters: number;
  nodes: number;
  versions: Versions;
  processes: ProcRecord[];
  entries: ClusterEntry[];
  ready: boolean;
  /** null: started by hand, stopped only by a plain `down`. */
  holders: Holder[] | null;
  /** kwok serves exec, logs and port-forward from its CRDs (an older fleet is started again). */
  kwokDebugging?: boolean;
  /** Real nodes per cluster (absent: 0). */
  realNodes?: number;
  /** What each real node made on the host, recorded before it is made: `down` removes it. */
  realNodeRecords?: RealNodeRecord[];
}

function procStat(pid: number): { state: string; start: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { state: rest[0] ?? "", start: rest[19] ?? "" };
  } catch {
    return undefined;
  }
}

function holder(pid: number): Holder {
  const stat = procStat(pid);
  if (!stat) throw new Error(`--holder ${pid}: no such process`);
  return { pid, start: stat.start };
}

function isAlive(p: ProcRecord | Holder): boolean {
  const s = procStat(p.pid);
  return s !== undefined && s.start === p.start && s.state !== "Z" && s.state !== "X";
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function stopProcesses(records: ProcRecord[]): Promise<void> {
  const tiers = [...new Set(records.map((p) => p.tier))].sort((a, b) => b - a);
  for (const tier of tiers) {
    const group = records.filter((p) => p.tier === tier && isAlive(p));
    for (const p of group) {
      try {
        process.kill(p.pid, "SIGTERM");
      } catch {}
    }
    const deadline = Date.now() + 10_000;
    while (group.some(isAlive) && Date.now() < deadline) await sleep(100);
    for (const p of group.filter(isAlive)) {
      log(`${p.name} (pid ${p.pid}) ignored SIGTERM for 10s: SIGKILL`);
      try {
        process.kill(p.pid, "SIGKILL");
      } catch {}
    }
    const killDeadline = Date.now() + 5_000;
    while (group.some(isAlive) && Date.now() < killDeadline) await sleep(50);
  }
}

/** Stops the recorded processes, then removes what the real nodes left on the host. */
async function stopAll(state: State): Promise<void> {
  await stopProcesses(state.processes);
  const records = state.realNodeRecords ?? [];
  for (const record of records) {
    for (const problem of await cleanupRealNode(record)) console.error(`fleet: cleanup: ${problem}`);
  }
  if (records.length > 0) cleanupHostShared();
}

function tail(file: string, lines = 25): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

class Fleet {
  readonly dir: string;
  readonly state: State;
  readonly children = new Map<string, ChildProcess>();

  constructor(dir: string, state: State) {
    this.dir = dir;
    this.state = state;
  }

  save(): void {
    writeFileSync(join(this.dir, "state.json"), `${JSON.stringify(this.state, null, 2)}\n`);
  }

  start(
    name: string,
    tier: number,
    bin: string,
    args: string[],
    env: NodeJS.ProcessEnv = process.env,
  ): ProcRecord {
    const logFile = join(this.dir, "logs", `${name}.log`);
    const fd = openSync(logFile, "a");
    const child = spawn(bin, args, { detached: true, stdio: ["ignore", fd, fd], env });
    closeSync(fd);
    child.unref();
    // a failed exec shows up here (and as the process's exit, which waitFor reports with its log)
    child.once("error", (err) => console.error(`fleet: ${name}: ${err.message}`));
    if (child.pid === undefined) throw new Error(`could not start ${bin}`);
    // /proc/<pid>/stat exists as soon as spawn returns a pid
    const record: ProcRecord = {
      name,
      pid: child.pid,
      start: procStat(child.pid)?.start ?? "",
      tier,
      log: logFile,
    };
    this.children.set(name, child);
    this.state.processes.push(record);
    this.save();
    return record;
  }

  /** Polls `check` until it returns true; fails early, with the log, if a watched process dies. */
  async waitFor(
    what: string,
    watch: ProcRecord[],
    check: () => Promise<boolean>,
    timeoutMs = 120_000,
  ): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let lastError = "";
    for (;;) {
      for (const p of watch) {
        const child = this.children.get(p.name);
        if (child?.exitCode !== null || !isAlive(p)) {
          throw new Error(
            `${p.name} exited while waiting for ${what}; last lines of ${p.log}:\n${tail(p.log)}`,
          );
        }
      }
      try {
        if (await check()) return;
      } catch (err) {
        lastError = err instanceof Error ? err.message : String(err);
      }
      if (Date.now() > deadline) {
        const logs = watch.map((p) => `--- ${p.log}\n${tail(p.log, 15)}`).join("\n");
        throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what} (${lastError})\n${logs}`);
      }
      await sleep(200);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// network

/**
 * The fleet's listen ports, chosen before its servers start (kwok binds ~30 s later). Below the
 * kernel's ephemeral range: a port listen(0) hands out is one any outgoing connection may take as
 * its source port in the meantime (a fleet once failed "kwok: bind: address already in use").
 */
async function freePorts(n: number): Promise<number[]> {
  const [ephemeralLow] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
    .trim()
    .split(/\s+/)
    .map(Number);
  const high = Math.min((ephemeralLow ?? 32768) - 1, 32767);
  const low = Math.max(1024, high - 12_000);
  // hold every port until all are chosen, so no two are the same
  const servers: Server[] = [];
  const ports: number[] = [];
  for (let tries = 0; ports.length < n; tries++) {
    if (tries > 50 * n) throw new Error(`no ${n} free ports from ${low} to ${high}`);
    const port = low + (randomBytes(2).readUInt16BE(0) % (high - low + 1));
    if (ports.includes(port)) continue;
    const server = createServer();
    const bound = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (!bound) continue;
    servers.push(server);
    ports.push(port);
  }
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

interface Tls {
  ca?: string;
  cert?: string;
  key?: string;
  insecure?: boolean;
}

interface Reply {
  status: number;
  body: string;
}

function call(
  url: string,
  opts: { method?: string; body?: unknown; tls?: Tls; timeoutMs?: number } = {},
): Promise<Reply> {
  const u = new URL(url);
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  const headers: Record<string, string> = { accept: "application/json" };
  if (payload !== undefined) {
    headers["content-type"] = "application/json";
    headers["content-length"] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve, reject) => {
    const common = { method: opts.method ?? "GET", headers, timeout: opts.timeoutMs ?? 5_000 };
    const onResponse = (res: import("node:http").IncomingMessage): void => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
      );
      res.on("error", reject);
    };
    const req =
      u.protocol === "https:"
        ? httpsRequest(
            u,
            {
              ...common,
              ca: opts.tls?.ca,
              cert: opts.tls?.cert,
              key: opts.tls?.key,
              rejectUnauthorized: !opts.tls?.insecure,
            },
            onResponse,
          )
        : httpRequest(u, common, onResponse);
    req.on("timeout", () => req.destroy(new Error(`timeout: ${url}`)));
    req.on("error", reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

// ---------------------------------------------------------------------------------------------
// one cluster

interface ClusterPlan {
  index: number;
  name: string;
  dir: string;
  apiPort: number;
  kcmPort: number;
  schedulerPort: number;
  kwokPort: number;
  kubeletPorts: number[];
}

/** What real nodes need from the run: a run id for cgroup names, the kubelet, the image archive. */
interface RealNodeContext {
  runId: string;
  kubelet: string;
  imageArchive: string;
}

function kubeconfig(name: string, server: string, caPem: string, user: string, client: CertKey): string {
  const b64 = (s: string): string => Buffer.from(s).toString("base64");
  return YAML.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name, cluster: { server, "certificate-authority-data": b64(caPem) } }],
    users: [
      {
        name: user,
        user: { "client-certificate-data": b64(client.certPem), "client-key-data": b64(client.keyPem) },
      },
    ],
    contexts: [{ name, context: { cluster: name, user } }],
    "current-context": name,
  });
}

/** Node shapes of the seeds' examples: GPU nodes and robot (edge) nodes. */
export function nodeObjects(cluster: number, count: number): object[] {
  const edges = Math.floor((count + 1) / 3);
  const nodes: object[] = [];
  for (let i = 0; i < count; i++) {
    const edge = i >= count - edges;
    const name = edge ? `edge-${i - (count - edges)}` : `gpu-${i}`;
    const capacity: Record<string, string> = edge
      ? { cpu: "8", memory: "16Gi", pods: "110", "ephemeral-storage": "100Gi", "rlinf.io/device": "2" }
      : { cpu: "32", memory: "128Gi", pods: "110", "ephemeral-storage": "1Ti", "nvidia.com/gpu": "8" };
    const labels: Record<string, string> = {
      "kubernetes.io/hostname": name,
      "kubernetes.io/os": "linux",
      "kubernetes.io/arch": "amd64",
      type: "kwok",
      ...(edge ? { "rlark.io/node-category-robot": "true" } : { "nvidia.com/gpu": "true" }),
    };
    const ip = `172.30.${cluster}.${10 + i}`;
    nodes.push({
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name,
        labels,
        annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" },
      },
      spec: { podCIDR: `10.244.${i}.0/24`, podCIDRs: [`10.244.${i}.0/24`] },
      status: {
        capacity,
        allocatable: capacity,
        addresses: [
          { type: "InternalIP", address: ip },
          { type: "Hostname", address: name },
          // where the kube-apiserver reaches this node's kubelet (the one kwok, on loopback) for
          // exec, logs and port-forward: --kubelet-preferred-address-types picks it
          { type: "ExternalIP", address: "127.0.0.1" },
        ],
      },
    });
  }
  return nodes;
}

async function startCluster(
  fleet: Fleet,
  bins: Binaries,
  etcdUrl: string,
  plan: ClusterPlan,
  nodes: number,
  real: RealNodeContext | undefined,
) {
  const { name, dir } = plan;
  const pki = join(dir, "pki");
  mkdirSync(pki, { recursive: true });
  const file = (rel: string, content: string): string => {
    const path = join(dir, rel);
    writeFileSync(path, content, { mode: 0o600 });
    return path;
  };

  // PKI, made fresh for every run
  const ca = makeCa(`${name}-ca`);
  const serving = makeLeaf(ca, {
    commonName: "kube-apiserver",
    server: {
      dnsNames: [
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
      ],
      ips: ["127.0.0.1", "10.96.0.1"],
    },
  });
  const admin = makeLeaf(ca, { commonName: "rlark-admin", organizations: ["system:masters"], client: true });
  const kcm = makeLeaf(ca, { commonName: "system:kube-controller-manager", client: true });
  const sched = makeLeaf(ca, { commonName: "system:kube-scheduler", client: true });
  // the kube-apiserver speaks only HTTPS to kubelets (it does not verify them without a CA flag)
  const kwokServing = makeLeaf(ca, {
    commonName: "kwok",
    server: { dnsNames: ["localhost"], ips: ["127.0.0.1"] },
  });
  // the front proxy (aggregation layer) has a CA of its own, as in kubeadm
  const frontProxyCa = makeCa(`${name}-front-proxy-ca`);
  const frontProxy = makeLeaf(frontProxyCa, { commonName: "front-proxy-client", client: true });
  const sa = rsaKeyPair();
  // real kubelets authenticate the API server (x509, the cluster's CA) and ask it whether to allow
  // (webhook): system:masters may exec, read logs and port-forward
  const kubeletClient = real
    ? makeLeaf(ca, {
        commonName: "kube-apiserver-kubelet-client",
        organizations: ["system:masters"],
        client: true,
      })
    : undefined;
  const caFile = file("pki/ca.crt", ca.certPem);
  const servingCert = file("pki/apiserver.crt", serving.certPem);
  const servingKey = file("pki/apiserver.key", serving.keyPem);
  const saKey = file("pki/sa.key", sa.keyPem);
  const saPub = file("pki/sa.pub", sa.publicPem);
  const frontProxyCaFile = file("pki/front-proxy-ca.crt", frontProxyCa.certPem);
  const frontProxyCert = file("pki/front-proxy-client.crt", frontProxy.certPem);
  const frontProxyKey = file("pki/front-proxy-client.key", frontProxy.keyPem);
  const kwokCert = file("pki/kwok.crt", kwokServing.certPem);
  const kwokKey = file("pki/kwok.key", kwokServing.keyPem);

  const server = `https://127.0.0.1:${plan.apiPort}`;
  const adminKubeconfig = file(
    "admin.kubeconfig",
    kubeconfig(name, server, ca.certPem, `${name}-admin`, admin),
  );
  const kcmKubeconfig = file(
    "controller-manager.kubeconfig",
    kubeconfig(name, server, ca.certPem, "kcm", kcm),
  );
  const schedKubeconfig = file(
    "scheduler.kubeconfig",
    kubeconfig(name, server, ca.certPem, "scheduler", sched),
  );
  const schedConfig = file(
    "scheduler.yaml",
    YAML.stringify({
      apiVersion: "kubescheduler.config.k8s.io/v1",
      kind: "KubeSchedulerConfiguration",
      clientConnection: { kubeconfig: schedKubeconfig, qps: 100, burst: 200 },
      leaderElection: { leaderElect: false },
    }),
  );
  const tls: Tls = { ca: ca.certPem, cert: admin.certPem, key: admin.keyPem };
  const api = (path: string, opts: { method?: string; body?: unknown } = {}): Promise<Reply> =>
    call(`${server}${path}`, { ...opts, tls });

  log(`${name}: starting kube-apiserver on ${server}`);
  const apiserver = fleet.start(`${name}-kube-apiserver`, 1, bins.kubeApiserver, [
    "--advertise-address=127.0.0.1",
    "--bind-address=127.0.0.1",
    `--secure-port=${plan.apiPort}`,
    `--etcd-servers=${etcdUrl}`,
    `--etcd-prefix=/${name}`,
    `--client-ca-file=${caFile}`,
    `--tls-cert-file=${servingCert}`,
    `--tls-private-key-file=${servingKey}`,
    "--authorization-mode=Node,RBAC",
    "--enable-admission-plugins=NodeRestriction",
    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    `--service-account-key-file=${saPub}`,
    `--service-account-signing-key-file=${saKey}`,
    "--service-cluster-ip-range=10.96.0.0/16",
    `--requestheader-client-ca-file=${frontProxyCaFile}`,
    "--requestheader-allowed-names=front-proxy-client",
    "--requestheader-username-headers=X-Remote-User",
    "--requestheader-group-headers=X-Remote-Group",
    "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    `--proxy-client-cert-file=${frontProxyCert}`,
    `--proxy-client-key-file=${frontProxyKey}`,
    "--allow-privileged=true",
    // the `kubernetes` Service would get a loopback endpoint, which validation forbids
    "--endpoint-reconciler-type=none",
    "--kubelet-preferred-address-types=ExternalIP",
    "--profiling=false",
    `--cert-dir=${pki}`,
    ...(kubeletClient
      ? [
          `--kubelet-client-certificate=${file("pki/apiserver-kubelet-client.crt", kubeletClient.certPem)}`,
          `--kubelet-client-key=${file("pki/apiserver-kubelet-client.key", kubeletClient.keyPem)}`,
          // webhooks and APIServices behind a Service are dialled at an endpoint (a real pod's
          // address on its node's bridge): no kube-proxy here makes ClusterIPs lead anywhere
          "--enable-aggregator-routing=true",
        ]
      : []),
  ]);
  await fleet.waitFor(`${name} /readyz`, [apiserver], async () => {
    const r = await api("/readyz");
    return r.status === 200;
  });
  for (const crd of kwokDebuggingCrds()) {
    const r = await api("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
      method: "POST",
      body: crd,
    });
    if (r.status !== 201 && r.status !== 409)
      throw new Error(`${name}: creating a kwok CRD: ${r.status} ${r.body}`);
  }
  await fleet.waitFor(`${name}: kwok CRDs served`, [apiserver], async () => {
    const r = await api("/apis/kwok.x-k8s.io/v1alpha1");
    return r.status === 200 && KWOK_DEBUGGING_KINDS.every((kind) => r.body.includes(`"kind":"${kind}"`));
  });
  log(`${name}: kube-apiserver ready; starting controller-manager, scheduler, kwok`);

  const common = (port: number, certDir: string): string[] => [
    "--bind-address=127.0.0.1",
    `--secure-port=${port}`,
    `--cert-dir=${certDir}`,
    "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
  ];
  const controllerManager = fleet.start(`${name}-kube-controller-manager`, 2, bins.kubeControllerManager, [
    `--kubeconfig=${kcmKubeconfig}`,
    `--authentication-kubeconfig=${kcmKubeconfig}`,
    `--authorization-kubeconfig=${kcmKubeconfig}`,
    ...common(plan.kcmPort, join(dir, "kcm-certs")),
    "--leader-elect=false",
    "--use-service-account-credentials=true",
    `--service-account-private-key-file=${saKey}`,
    `--root-ca-file=${caFile}`,
    `--cluster-name=${name}`,
    "--kube-api-qps=100",
    "--kube-api-burst=200",
  ]);
  const scheduler = fleet.start(`${name}-kube-scheduler`, 2, bins.kubeScheduler, [
    `--config=${schedConfig}`,
    `--authentication-kubeconfig=${schedKubeconfig}`,
    `--authorization-kubeconfig=${schedKubeconfig}`,
    ...common(plan.schedulerPort, join(dir, "scheduler-certs")),
  ]);
  const stages = readdirSync(bins.kwokStages)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .map((f) => `--config=${join(bins.kwokStages, f)}`);
  const kwokHome = join(dir, "kwok-home"); // kwok also reads ~/.kwok/kwok.yaml: keep it isolated
  mkdirSync(kwokHome, { recursive: true });
  const kwok = fleet.start(
    `${name}-kwok`,
    2,
    bins.kwok,
    [
      `--kubeconfig=${adminKubeconfig}`,
      ...stages,
      // beside real nodes kwok takes only its own (annotated) nodes and their pods
      ...(real
        ? [`--manage-nodes-with-annotation-selector=${KWOK_NODE_SELECTOR}`]
        : ["--manage-all-nodes=true"]),
      "--node-ip=127.0.0.1",
      `--node-port=${plan.kwokPort}`,
      `--server-address=127.0.0.1:${plan.kwokPort}`,
      `--tls-cert-file=${kwokCert}`,
      `--tls-private-key-file=${kwokKey}`,
      `--enable-crds=${KWOK_DEBUGGING_KINDS.join(",")}`,
      "--node-lease-duration-seconds=40",
      "--cidr=10.245.0.1/16",
    ],
    { ...process.env, HOME: kwokHome },
  );
  const all = [apiserver, controllerManager, scheduler, kwok];

  for (const node of nodeObjects(plan.index + 1, nodes)) {
    const r = await api("/api/v1/nodes", { method: "POST", body: node });
    if (r.status !== 201 && r.status !== 409)
      throw new Error(`${name}: creating a node: ${r.status} ${r.body}`);
  }

  const healthy = (port: number) => async () =>
    (await call(`https://127.0.0.1:${port}/healthz`, { tls: { insecure: true } })).status === 200;
  await fleet.waitFor(`${name} controller-manager /healthz`, all, healthy(plan.kcmPort));
  await fleet.waitFor(`${name} scheduler /healthz`, all, healthy(plan.schedulerPort));
  await fleet.waitFor(`${name}: ${nodes} nodes Ready`, all, async () => {
    const r = await api("/api/v1/nodes");
    if (r.status !== 200) return false;
    const list = JSON.parse(r.body) as {
      items: { status?: { conditions?: { type: string; status: string }[] } }[];
    };
    const ready = list.items.filter((n) =>
      n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
    ).length;
    return ready >= nodes;
  });
  // pods are refused until the controller-manager has made the namespace's default ServiceAccount
  await fleet.waitFor(`${name}: default ServiceAccount`, all, async () => {
    return (await api("/api/v1/namespaces/default/serviceaccounts/default")).status === 200;
  });
  if (real) {
    log(`${name}: starting ${plan.kubeletPorts.length} real nodes (containerd + kubelet)`);
    // one at a time: each takes a bridge and a subnet, and two kubelets starting at once on two
    // shared cores only slow each other
    for (const [index, kubeletPort] of plan.kubeletPorts.entries()) {
      await startRealNode(
        fleet,
        api,
        { cluster: name, clusterDir: dir, index, ca, server, kubeletPort, ...real },
        (record) => {
          fleet.state.realNodeRecords = [...(fleet.state.realNodeRecords ?? []), record];
        },
        () => fleet.save(),
      );
    }
  }
  log(`${name}: ready (${nodes} nodes${real ? `, ${plan.kubeletPorts.length} real` : ""})`);
  return { name, kubeconfig: adminKubeconfig, server } satisfies ClusterEntry;
}

// ---------------------------------------------------------------------------------------------
// commands

function readState(dir: string): State | undefined {
  const path = join(dir, "state.json");
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, "utf8")) as State;
  } catch {
    return {
      clusters: 0,
      nodes: 0,
      versions: readVersions(),
      processes: [],
      entries: [],
      ready: false,
      holders: [],
    };
  }
}

async function healthyFleet(state: State): Promise<boolean> {
  if (!state.ready || !state.processes.every(isAlive)) return false;
  for (const entry of state.entries) {
    try {
      const kc = YAML.parse(readFileSync(entry.kubeconfig, "utf8")) as {
        clusters: { cluster: Record<string, string> }[];
        users: { user: Record<string, string> }[];
      };
      const d = (s: string | undefined): string => Buffer.from(s ?? "", "base64").toString("utf8");
      const r = await call(`${entry.server}/readyz`, {
        tls: {
          ca: d(kc.clusters[0]?.cluster["certificate-authority-data"]),
          cert: d(kc.users[0]?.user["client-certificate-data"]),
          key: d(kc.users[0]?.user["client-key-data"]),
        },
      });
      if (r.status !== 200) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/** Removes a fleet folder, refusing one that is not ours. */
function clearDir(dir: string): void {
  if (!existsSync(dir)) return;
  const ours = /^(state\.json|clusters\.json|logs|etcd|images|fleet-\d+)$/;
  const strangers = readdirSync(dir).filter((e) => !ours.test(e));
  if (strangers.length > 0) {
    throw new Error(
      `${dir} holds files that are not a fleet's (${strangers.join(", ")}): refusing to remove it`,
    );
  }
  // a real node's mount left behind (a pod's volume, a rootfs) would be emptied by rmSync
  if (readFileSync("/proc/self/mountinfo", "utf8").includes(` ${dir}/`)) {
    throw new Error(`${dir} still has mounts under it (see /proc/self/mountinfo): refusing to remove it`);
  }
  rmSync(dir, { recursive: true, force: true });
}

function saveState(dir: string, state: State): void {
  writeFileSync(join(dir, "state.json"), `${JSON.stringify(state, null, 2)}\n`);
}

async function up(
  dir: string,
  clusters: number,
  nodes: number,
  realNodes: number,
  by: Holder | undefined,
): Promise<void> {
  const t0 = Date.now();
  const versions = readVersions();
  const previous = readState(dir);
  if (previous) {
    const same =
      previous.clusters === clusters &&
      previous.nodes === nodes &&
      (previous.realNodes ?? 0) === realNodes &&
      previous.versions.k8s === versions.k8s &&
      previous.kwokDebugging === true;
    if (same && (await healthyFleet(previous))) {
      if (by && previous.holders) {
        previous.holders = previous.holders.filter((h) => isAlive(h) && h.pid !== by.pid).concat(by);
        saveState(dir, previous);
      }
      const users = previous.holders ? `, used by ${previous.holders.length} test runs` : ", started by hand";
      const real = realNodes ? ` + ${realNodes} real` : "";
      log(`already up: ${clusters} clusters x ${nodes} nodes${real} in ${dir}${users}`);
      return;
    }
    const alive = previous.processes.filter(isAlive);
    log(`cleaning up an earlier fleet in ${dir} (${alive.length} of its processes still running)`);
    await stopAll(previous);
  }
  clearDir(dir);
  mkdirSync(join(dir, "logs"), { recursive: true });

  const bins = binaries(versions);
  for (const [what, path] of Object.entries(bins)) {
    if (!existsSync(path)) throw new Error(`${what} is missing at ${path}: run bash hack/kube/build`);
  }
  if (realNodes > 0) checkRealNodeHost(kubeletBinary(versions));

  const state: State = {
    clusters,
    nodes,
    versions,
    processes: [],
    entries: [],
    ready: false,
    holders: by ? [by] : null,
    kwokDebugging: true,
    ...(realNodes > 0 ? { realNodes, realNodeRecords: [] } : {}),
  };
  const fleet = new Fleet(dir, state);
  fleet.save();

  const stop = async (signal: string): Promise<void> => {
    log(`${signal}: stopping what this run started`);
    await stopAll(state);
    process.exit(1);
  };
  process.once("SIGINT", () => void stop("SIGINT"));
  process.once("SIGTERM", () => void stop("SIGTERM"));

  try {
    const ports = await freePorts(2 + (4 + realNodes) * clusters);
    const [etcdClient, etcdPeer] = ports as [number, number];
    const etcdUrl = `http://127.0.0.1:${etcdClient}`;
    log(`starting etcd ${versions.etcd} on ${etcdUrl}`);
    const etcd = fleet.start("etcd", 0, bins.etcd, [
      "--name=fleet",
      `--data-dir=${join(dir, "etcd")}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=fleet=http://127.0.0.1:${etcdPeer}`,
      "--unsafe-no-fsync=true", // throwaway test data: durability is not the point, speed is
      "--log-level=warn",
    ]);
    await fleet.waitFor("etcd /health", [etcd], async () => {
      const r = await call(`${etcdUrl}/health`);
      return r.status === 200 && r.body.includes('"true"');
    });

    const plans: ClusterPlan[] = Array.from({ length: clusters }, (_, i) => {
      const name = `fleet-${i + 1}`;
      const first = 2 + (4 + realNodes) * i;
      const [apiPort, kcmPort, schedulerPort, kwokPort] = ports.slice(first, first + 4) as [
        number,
        number,
        number,
        number,
      ];
      const kubeletPorts = ports.slice(first + 4, first + 4 + realNodes);
      return {
        index: i,
        name,
        dir: join(dir, name),
        apiPort,
        kcmPort,
        schedulerPort,
        kwokPort,
        kubeletPorts,
      };
    });
    let real: RealNodeContext | undefined;
    if (realNodes > 0) {
      const imageArchive = buildImageArchive(join(dir, "images"));
      real = { runId: randomBytes(3).toString("hex"), kubelet: kubeletBinary(versions), imageArchive };
    }
    state.entries = await Promise.all(plans.map((p) => startCluster(fleet, bins, etcdUrl, p, nodes, real)));
    state.ready = true;
    fleet.save();
    writeFileSync(join(dir, "clusters.json"), `${JSON.stringify(state.entries, null, 2)}\n`);
    const extra = realNodes ? ` + ${realNodes} real` : "";
    log(`up in ${((Date.now() - t0) / 1000).toFixed(1)}s: ${clusters} clusters x ${nodes} nodes${extra}`);
    for (const e of state.entries) log(`  ${e.name}  ${e.server}  KUBECONFIG=${e.kubeconfig}`);
    log(`  summary: ${join(dir, "clusters.json")}`);
  } catch (err) {
    console.error(`fleet: up failed: ${err instanceof Error ? err.message : String(err)}`);
    log(`stopping what this run started (logs stay in ${join(dir, "logs")})`);
    await stopAll(state);
    process.exitCode = 1;
  }
}

/**
 * Plain `down` stops the fleet. `down --holder PID` only says that test run is done with it: the
 * fleet stops when no live holder is left, and a fleet started by hand is left running.
 * `down --if-orphaned` stops a fleet whose holders have all died (a crashed test run).
 */
async function down(dir: string, opts: { keep: boolean; by?: Holder; ifOrphaned: boolean }): Promise<void> {
  const state = readState(dir);
  if (!state) {
    log(`no fleet in ${dir}: nothing to stop`);
    return;
  }
  if (opts.by || opts.ifOrphaned) {
    if (state.holders === null) {
      log(`the fleet in ${dir} was started by hand: left running (stop it with hack/kube/down)`);
      return;
    }
    const left = state.holders.filter((h) => isAlive(h) && h.pid !== opts.by?.pid);
    if (left.length > 0) {
      state.holders = left;
      saveState(dir, state);
      log(`the fleet in ${dir} is still used by ${left.length} test runs: left running`);
      return;
    }
    if (opts.ifOrphaned && state.processes.some(isAlive)) log(`the test runs that used ${dir} are gone`);
  }
  const alive = state.processes.filter(isAlive);
  log(`stopping ${alive.length} processes of the fleet in ${dir}`);
  await stopAll(state);
  if (opts.keep) {
    state.processes = [];
    state.realNodeRecords = [];
    state.ready = false;
    saveState(dir, state);
    log(`stopped; state kept in ${dir}`);
  } else {
    clearDir(dir);
    log("stopped and removed");
  }
}

async function status(dir: string): Promise<void> {
  const state = readState(dir);
  if (!state) {
    log(`no fleet in ${dir}`);
    process.exitCode = 1;
    return;
  }
  for (const p of state.processes) log(`${isAlive(p) ? "running" : "stopped"}  ${p.name}  pid ${p.pid}`);
  const ok = await healthyFleet(state);
  log(ok ? "healthy" : "not healthy");
  if (!ok) process.exitCode = 1;
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      clusters: { type: "string", default: "2" },
      nodes: { type: "string", default: "3" },
      "real-nodes": { type: "string", default: "0" },
      keep: { type: "boolean", default: false },
      holder: { type: "string" },
      "if-orphaned": { type: "boolean", default: false },
    },
  });
  const dir = fleetDir();
  const by = values.holder === undefined ? undefined : holder(Number(values.holder));
  const count = (s: string, what: string, min = 1, max = 50): number => {
    const n = Number(s);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new Error(`--${what} must be an integer from ${min} to ${max}`);
    return n;
  };
  switch (positionals[0]) {
    case "up":
      return up(
        dir,
        count(values.clusters, "clusters"),
        count(values.nodes, "nodes"),
        count(values["real-nodes"], "real-nodes", 0, 8),
        by,
      );
    case "down":
      return down(dir, { keep: values.keep, by, ifOrphaned: values["if-orphaned"] });
    case "status":
      return status(dir);
    default:
      console.error(
        "usage: fleet.ts up [--clusters N] [--nodes K] [--real-nodes R] [--holder PID] | down [--keep] [--holder PID | --if-orphaned] | status",
      );
      process.exitCode = 2;
  }
}

if (import.meta.main) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error(`fleet: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  });
}
