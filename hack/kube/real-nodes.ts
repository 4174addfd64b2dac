// Real nodes beside the kwok ones (`hack/kube/up --real-nodes N`): per node a containerd (Debian's,
// with its CRI plugin) and a kubelet of the pinned Kubernetes version, each with its own folder,
// sockets, ports and cgroup root, CNI bridge networking on a /24 of its own, and the images built
// here (images.ts) imported at start. Everything a node makes on the host is recorded before it
// is made (RealNodeRecord), so `down` removes it even after a crash: the processes in its cgroups,
// the containerd shims, the mounts (kubelet's, containerd's rootfs and netns bind mounts), the
// bridge (the pods' veths and netns go with their mounts), the cgroups and kubelet's log symlinks.
import { execFileSync, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmdirSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import YAML from "yaml";
import { REAL_NODE_IMAGES } from "./images.ts";
import { type Ca, type CertKey, makeLeaf } from "./pki.ts";

/** The label on every real node (kwok nodes carry `type: kwok` and no such label). */
export const REAL_NODE_LABEL = "rlark.io/real-node";
/** kwok manages only nodes with this annotation once a fleet has real nodes. */
export const KWOK_NODE_SELECTOR = "kwok.x-k8s.io/node=fake";

const CNI_BIN = "/usr/lib/cni";
/** Host programs a real node needs, with the Debian package that brings each. */
export const REAL_NODE_NEEDS: [string, string][] = [
  ["/usr/bin/containerd", "containerd"],
  ["/usr/bin/ctr", "containerd"],
  ["/usr/sbin/runc", "runc"],
  [`${CNI_BIN}/bridge`, "containernetworking-plugins"],
  [`${CNI_BIN}/host-local`, "containernetworking-plugins"],
  [`${CNI_BIN}/loopback`, "containernetworking-plugins"],
  ["/bin/busybox", "busybox-static"],
  ["/usr/lib/openssh/sftp-server", "openssh-sftp-server"],
  ["/usr/bin/unshare", "util-linux"],
  ["/usr/bin/nsenter", "util-linux"],
];

/**
 * Host paths that are per machine on a real cluster but fixed whatever kubelet's flags say:
 * kubelet's device manager socket and checkpoint (/var/lib/kubelet/device-plugins) and its
 * pod-resources socket; /run/rlark, where the nodeserver, device plugin and controllers serve
 * the pods of their node, and /var/lib/rlark, where the controllers put rosctr and camctr for
 * them (hostPath volumes). Each real node's containerd and kubelet run
 * in a mount namespace of their own (host mounts propagate in, theirs stay inside) in which a
 * folder of the node's is bind-mounted over each, so two real nodes on one host never meet
 * there. The host keeps an empty directory at each as the mount point.
 */
export const PER_NODE_HOST_DIRS: [string, string][] = [
  ["/var/lib/kubelet", "host/var-lib-kubelet"],
  ["/run/rlark", "host/run-rlark"],
  ["/var/lib/rlark", "host/var-lib-rlark"],
];

/** Everything one real node puts on the host, saved in state.json before it is made. */
export interface RealNodeRecord {
  cluster: string;
  name: string;
  dir: string;
  /** containerd's socket: its shims carry it as `-address`. */
  socket: string;
  /** The kubelet's cgroupRoot, made in every cgroup hierarchy. */
  cgroupRoot?: string;
  bridge?: string;
  subnet?: string;
}

export interface RealNodePlan {
  cluster: string;
  clusterDir: string;
  /** 0-based index of the real node in its cluster. */
  index: number;
  /** Unique per `up`, so cgroup roots of two fleets (or a leftover) never meet. */
  runId: string;
  ca: Ca;
  server: string;
  kubeletPort: number;
  kubelet: string;
  imageArchive: string;
}

interface Proc {
  name: string;
  pid: number;
}

/** What real nodes use of fleet.ts's Fleet (processes recorded in state.json, waits with logs). */
export interface ProcessStarter<P extends Proc> {
  start(name: string, tier: number, bin: string, args: string[]): P;
  waitFor(what: string, watch: P[], check: () => Promise<boolean>, timeoutMs?: number): Promise<void>;
}

export type Api = (
  path: string,
  opts?: { method?: string; body?: unknown },
) => Promise<{ status: number; body: string }>;

/** A clear error when the host cannot run real nodes, naming what to install. */
export function checkRealNodeHost(kubelet: string): void {
  if (process.getuid?.() !== 0)
    throw new Error("--real-nodes needs root (cgroups, network namespaces, mounts)");
  const missing = REAL_NODE_NEEDS.filter(([path]) => !existsSync(path)).map(
    ([path, pkg]) => `${path} (${pkg})`,
  );
  if (missing.length > 0)
    throw new Error(`--real-nodes needs Debian packages: missing ${missing.join(", ")}`);
  if (!existsSync(kubelet))
    throw new Error(`kubelet is missing at ${kubelet}: run bash hack/kube/build --kubelet`);
}

// ---------------------------------------------------------------------------------------------
// host resources

interface Mount {
  point: string;
  fstype: string;
}

function mounts(): Mount[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const fields = line.split(" ");
      const sep = fields.indexOf("-");
      const unoctal = (s: string): string =>
        s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
      return { point: unoctal(fields[4] ?? ""), fstype: fields[sep + 1] ?? "" };
    });
}

/** Mount points of every cgroup hierarchy (v1 controllers, named ones, and the v2 one of a hybrid). */
function cgroupMounts(): string[] {
  return mounts()
    .filter((m) => m.fstype === "cgroup" || m.fstype === "cgroup2")
    .map((m) => m.point);
}

/** kubelet needs its cgroupRoot in every hierarchy first; cpuset cgroups start with no CPUs. */
function makeCgroupRoot(root: string): void {
  for (const mnt of cgroupMounts()) {
    const dir = join(mnt, root);
    mkdirSync(dir, { recursive: true });
    if (existsSync(join(dir, "cpuset.cpus"))) {
      for (const f of ["cpuset.cpus", "cpuset.mems"]) writeFileSync(join(dir, f), readFileSync(join(mnt, f)));
    }
  }
}

/** Every PID in the cgroup tree `root` of any hierarchy. */
function cgroupPids(root: string): number[] {
  const pids = new Set<number>();
  const walk = (dir: string): void => {
    if (!existsSync(dir)) return;
    for (const line of readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n"))
      if (line) pids.add(Number(line));
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(join(dir, e.name));
  };
  for (const mnt of cgroupMounts()) walk(join(mnt, root));
  return [...pids];
}

function removeCgroupTree(dir: string): void {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true }))
    if (e.isDirectory()) removeCgroupTree(join(dir, e.name));
  rmdirSync(dir);
}

function ip(args: string[]): { ok: boolean; out: string } {
  const r = spawnSync("ip", args, { encoding: "utf8" });
  return { ok: r.status === 0, out: `${r.stdout}${r.stderr}`.trim() };
}

/** The host's address on the node's bridge: the pods' default gateway, and kubelet's address. */
function bridgeGateway(record: RealNodeRecord): string {
  if (!record.subnet) throw new Error(`${record.name}: no bridge reserved`);
  return record.subnet.replace(/0\/24$/, "1");
}

/**
 * Takes the first free 10.250.N.0/24 for a node's bridge: creating the bridge (`rlark-brN`) is
 * the reservation, since the kernel refuses a second link of that name, and its gateway address
 * puts the subnet in the routing table, where the next node (of any fleet) sees it taken.
 */
function reserveBridge(record: RealNodeRecord, save: () => void): void {
  const routes = ip(["-4", "route", "show"]).out;
  for (let n = 0; n < 256; n++) {
    const subnet = `10.250.${n}.0/24`;
    if (routes.includes(subnet)) continue;
    const bridge = `rlark-br${n}`;
    if (!ip(["link", "add", "name", bridge, "type", "bridge"]).ok) continue;
    record.bridge = bridge;
    record.subnet = subnet;
    save();
    for (const args of [
      ["addr", "add", `10.250.${n}.1/24`, "dev", bridge],
      ["link", "set", bridge, "up"],
    ]) {
      const r = ip(args);
      if (!r.ok) throw new Error(`ip ${args.join(" ")}: ${r.out}`);
    }
    return;
  }
  throw new Error("no free 10.250.N.0/24 for a real node's bridge");
}

function processes(): { pid: number; args: string[] }[] {
  const out: { pid: number; args: string[] }[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const args = readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0");
      out.push({ pid: Number(e), args });
    } catch {}
  }
  return out;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function kill(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {}
}

/** containerd shims of this node: started with `-address <its socket>`, they outlive containerd. */
function shimPids(record: RealNodeRecord): number[] {
  return processes()
    .filter((p) => (p.args[0] ?? "").includes("containerd-shim") && p.args.includes(record.socket))
    .map((p) => p.pid);
}

/**
 * Removes what one real node left on the host. Its kubelet and containerd are stopped already
 * (they are recorded processes); pods may still run, so: kill everything in its cgroups and its
 * shims, unmount what is under its folder (deepest first), then the bridge and the cgroups.
 */
export async function cleanupRealNode(record: RealNodeRecord): Promise<string[]> {
  const problems: string[] = [];
  const shimSockets: string[] = [];
  const tasks = join(record.dir, "containerd/state/io.containerd.runtime.v2.task/k8s.io");
  if (existsSync(tasks)) {
    for (const id of readdirSync(tasks)) {
      try {
        shimSockets.push(
          readFileSync(join(tasks, id, "address"), "utf8")
            .trim()
            .replace(/^unix:\/\//, ""),
        );
      } catch {}
    }
  }
  const deadline = Date.now() + 15_000;
  for (;;) {
    const pids = [...(record.cgroupRoot ? cgroupPids(record.cgroupRoot) : []), ...shimPids(record)];
    if (pids.length === 0) break;
    if (Date.now() > deadline) {
      problems.push(`${record.name}: processes ${pids.join(", ")} survived SIGKILL`);
      break;
    }
    for (const pid of pids) kill(pid);
    await sleep(100);
  }
  for (const socket of shimSockets) {
    try {
      unlinkSync(socket);
    } catch {}
  }
  const under = (p: string): boolean => p === record.dir || p.startsWith(`${record.dir}/`);
  for (let round = 0; round < 5; round++) {
    const points = mounts()
      .map((m) => m.point)
      .filter(under)
      .sort((a, b) => b.length - a.length);
    if (points.length === 0) break;
    for (const point of points) {
      if (spawnSync("umount", [point]).status !== 0) spawnSync("umount", ["-l", point]);
    }
  }
  const left = mounts().filter((m) => under(m.point));
  if (left.length > 0) problems.push(`${record.name}: mounts left: ${left.map((m) => m.point).join(", ")}`);
  if (record.bridge && ip(["link", "show", record.bridge]).ok) {
    const r = ip(["link", "del", record.bridge]);
    if (!r.ok) problems.push(`${record.name}: ip link del ${record.bridge}: ${r.out}`);
  }
  if (record.cgroupRoot) {
    for (const mnt of cgroupMounts()) {
      try {
        removeCgroupTree(join(mnt, record.cgroupRoot));
      } catch (err) {
        problems.push(`${record.name}: cgroup ${mnt}${record.cgroupRoot}: ${(err as Error).message}`);
      }
    }
  }
  // kubelet links each container's log into /var/log/containers (a fixed path)
  const links = "/var/log/containers";
  if (existsSync(links)) {
    for (const f of readdirSync(links)) {
      try {
        if (under(readlinkSync(join(links, f)))) unlinkSync(join(links, f));
      } catch {}
    }
  }
  return problems;
}

/** Removes `dir` if it is empty (it may be another program's: then it is left). */
function rmdirIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {}
}

/**
 * What kubelets and shims share host-wide, removed when the last kubelet has stopped: kubelet's
 * iptables chains KUBE-KUBELET-CANARY (to notice a flush), KUBE-IPTABLES-HINT and KUBE-FIREWALL
 * (jumped to from INPUT and OUTPUT: it drops packets to 127.0.0.0/8 from other sources); the
 * device manager's socket, whose path is fixed (/var/lib/kubelet/device-plugins/kubelet.sock,
 * whatever --root-dir says); and the then empty folders kubelet and the shims made.
 */
export function cleanupHostShared(): void {
  if (processes().some((p) => /(^|\/)kubelet$/.test(p.args[0] ?? ""))) return;
  try {
    unlinkSync("/var/lib/kubelet/device-plugins/kubelet.sock");
  } catch {}
  for (const dir of [
    "/var/lib/kubelet/device-plugins",
    "/var/lib/kubelet",
    "/run/rlark",
    "/var/lib/rlark",
    "/var/log/containers",
    "/run/containerd/s",
    "/run/containerd",
  ]) {
    rmdirIfEmpty(dir);
  }
  const run = (tool: string, args: string[]): boolean =>
    spawnSync(tool, ["-w", ...args], { stdio: "ignore" }).status === 0;
  for (const tool of ["iptables", "ip6tables"]) {
    for (const builtin of ["INPUT", "OUTPUT"]) {
      for (let i = 0; i < 10 && run(tool, ["-t", "filter", "-D", builtin, "-j", "KUBE-FIREWALL"]); i++);
    }
    for (const [table, chain] of [
      ["mangle", "KUBE-KUBELET-CANARY"],
      ["nat", "KUBE-KUBELET-CANARY"],
      ["filter", "KUBE-KUBELET-CANARY"],
      ["filter", "KUBE-FIREWALL"],
      ["mangle", "KUBE-IPTABLES-HINT"],
    ] as const) {
      if (!run(tool, ["-t", table, "-n", "-L", chain])) continue;
      run(tool, ["-t", table, "-F", chain]);
      run(tool, ["-t", table, "-X", chain]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// one node

function kubeconfig(cluster: string, server: string, caPem: string, user: string, client: CertKey): string {
  const b64 = (s: string): string => Buffer.from(s).toString("base64");
  return YAML.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: cluster, cluster: { server, "certificate-authority-data": b64(caPem) } }],
    users: [
      {
        name: user,
        user: { "client-certificate-data": b64(client.certPem), "client-key-data": b64(client.keyPem) },
      },
    ],
    contexts: [{ name: cluster, context: { cluster, user } }],
    "current-context": cluster,
  });
}

function containerdConfig(dir: string, socket: string): string {
  const cri = `plugins."io.containerd.grpc.v1.cri"`;
  const q = JSON.stringify;
  return `version = 2
root = ${q(join(dir, "containerd/root"))}
state = ${q(join(dir, "containerd/state"))}
# snapshotters this machine cannot use (or need): native is the one that works everywhere
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.overlayfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = ${q(socket)}
[ttrpc]
  address = ${q(`${socket}.ttrpc`)}
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = ${q(join(dir, "containerd/opt"))}

[${cri}]
  sandbox_image = ${q(REAL_NODE_IMAGES.pause)}
  # no CAP_SYS_RESOURCE here: without this runc fails with "can't get final child's PID from pipe: EOF"
  restrict_oom_score_adj = true
  # the pods' network namespaces are bind-mounted under this node's folder, not /var/run/netns
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  [${cri}.containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [${cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [${cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
        # runc's state (else /run/containerd/runc, shared by every containerd on the host)
        Root = ${q(join(dir, "runc"))}
  [${cri}.cni]
    bin_dir = ${q(CNI_BIN)}
    conf_dir = ${q(join(dir, "cni/net.d"))}
    max_conf_num = 1
`;
}

/**
 * The bridge exists already (reserveBridge) with the gateway address; pods route through it by
 * default, but nothing masquerades or forwards for them.
 */
function cniConfig(record: RealNodeRecord, dir: string): object {
  const gateway = bridgeGateway(record);
  return {
    cniVersion: "0.4.0",
    name: `rlark-${record.bridge}`,
    plugins: [
      {
        type: "bridge",
        bridge: record.bridge,
        isGateway: false,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: "host-local",
          ranges: [[{ subnet: record.subnet, gateway }]],
          // a default route, as pods on a real cluster have: a connect() to an address without a
          // route fails before iptables sees it (the Domain redirect needs one to the Domain's CIDR)
          routes: [{ dst: "0.0.0.0/0", gw: gateway }],
          dataDir: join(dir, "cni/ipam"),
        },
      },
    ],
  };
}

async function ctrReady(socket: string): Promise<boolean> {
  return spawnSync("ctr", ["--address", socket, "version"], { stdio: "ignore", timeout: 5_000 }).status === 0;
}

export async function startRealNode<P extends Proc>(
  fleet: ProcessStarter<P>,
  api: Api,
  plan: RealNodePlan,
  remember: (record: RealNodeRecord) => void,
  save: () => void,
): Promise<P[]> {
  const name = `real-${plan.index}`;
  const dir = join(plan.clusterDir, name);
  const socket = join(dir, "containerd.sock");
  const record: RealNodeRecord = { cluster: plan.cluster, name, dir, socket };
  for (const d of ["containerd", "cni/net.d", "cni/ipam", "kubelet", "pods-logs", "volume-plugins", "pki"]) {
    mkdirSync(join(dir, d), { recursive: true });
  }
  for (const [host, own] of PER_NODE_HOST_DIRS) {
    mkdirSync(host, { recursive: true });
    mkdirSync(join(dir, own), { recursive: true });
  }
  remember(record);
  save();

  reserveBridge(record, save);
  record.cgroupRoot = `/rlark-${plan.runId}-${plan.cluster}-${name}`;
  save();
  makeCgroupRoot(record.cgroupRoot);

  const tag = `${plan.cluster}-${name}`;
  writeFileSync(join(dir, "containerd.toml"), containerdConfig(dir, socket));
  writeFileSync(join(dir, "cni/net.d/10-bridge.conflist"), JSON.stringify(cniConfig(record, dir), null, 2));
  // containerd (and so its shims, runc and the pods) in the node's own mount namespace, with the
  // node's folders over PER_NODE_HOST_DIRS; unshare and sh exec, so the PID is containerd's
  const binds = PER_NODE_HOST_DIRS.map(
    ([host, own]) => `mount --bind ${JSON.stringify(join(dir, own))} ${host}`,
  ).join(" && ");
  const containerd = fleet.start(`${tag}-containerd`, 3, "/usr/bin/unshare", [
    "--mount",
    "--propagation",
    "slave",
    "--",
    "/bin/sh",
    "-c",
    `${binds} && exec /usr/bin/containerd --config "$0"`,
    join(dir, "containerd.toml"),
  ]);
  await fleet.waitFor(`${tag}: containerd answers`, [containerd], () => ctrReady(socket), 60_000);
  execFileSync(
    "ctr",
    ["--address", socket, "-n", "k8s.io", "images", "import", "--snapshotter", "native", plan.imageArchive],
    { stdio: "ignore" },
  );

  // the kubelet's client certificate (Node authorizer: system:node:<name> in system:nodes) and
  // its serving certificate, which the API server reaches at <gateway>:<kubeletPort>
  const gateway = bridgeGateway(record);
  const client = makeLeaf(plan.ca, {
    commonName: `system:node:${name}`,
    organizations: ["system:nodes"],
    client: true,
  });
  const serving = makeLeaf(plan.ca, {
    commonName: name,
    server: { dnsNames: [name, "localhost"], ips: [gateway] },
  });
  const file = (rel: string, content: string): string => {
    const path = join(dir, rel);
    writeFileSync(path, content, { mode: 0o600 });
    return path;
  };
  const caFile = file("pki/ca.crt", plan.ca.certPem);
  const kubeconfigFile = file(
    "kubelet.kubeconfig",
    kubeconfig(plan.cluster, plan.server, plan.ca.certPem, name, client),
  );

  // The Node is made here, with its addresses: kubelet refuses a loopback --node-ip, and with
  // --cloud-provider=external it keeps the addresses a Node already has. ExternalIP, the node
  // bridge's gateway address (on the host), is where the API server
  // (--kubelet-preferred-address-types=ExternalIP) reaches this kubelet: not 127.0.0.1, since the
  // API server's node proxy (nodes/<name>/proxy/stats/summary, which the agent's disk figures
  // read) refuses a loopback address with "address not allowed". InternalIP stays 127.0.0.1: the
  // hostNetwork pods' (nodeservers') address, where the rest of the host reaches them.
  const node = {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      labels: {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": process.arch === "arm64" ? "arm64" : "amd64",
        type: "real",
        [REAL_NODE_LABEL]: "true",
      },
    },
    spec: { podCIDR: record.subnet, podCIDRs: [record.subnet] },
    status: {
      addresses: [
        { type: "InternalIP", address: "127.0.0.1" },
        { type: "ExternalIP", address: gateway },
        { type: "Hostname", address: name },
      ],
    },
  };
  const created = await api("/api/v1/nodes", { method: "POST", body: node });
  if (created.status !== 201) throw new Error(`${tag}: creating its Node: ${created.status} ${created.body}`);

  const endpoint = `unix://${socket}`;
  const config = file(
    "kubelet.yaml",
    YAML.stringify({
      apiVersion: "kubelet.config.k8s.io/v1beta1",
      kind: "KubeletConfiguration",
      address: gateway,
      port: plan.kubeletPort,
      readOnlyPort: 0,
      healthzPort: 0,
      tlsCertFile: file("pki/kubelet.crt", serving.certPem),
      tlsPrivateKeyFile: file("pki/kubelet.key", serving.keyPem),
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true },
        x509: { clientCAFile: caFile },
      },
      authorization: { mode: "Webhook" },
      containerRuntimeEndpoint: endpoint,
      imageServiceEndpoint: endpoint,
      cgroupDriver: "cgroupfs",
      cgroupRoot: record.cgroupRoot,
      cgroupsPerQOS: true,
      failSwapOn: false,
      // kubelet's KUBE-FIREWALL drops new packets to 127.0.0.0/8 from any other source host-wide,
      // re-added every minute by its canary: the test hosts in network namespaces beside a
      // real-node fleet reach the hub on loopback addresses that way, so the fleet makes none
      makeIPTablesUtilChains: false,
      podLogsDir: join(dir, "pods-logs"),
      volumePluginDir: join(dir, "volume-plugins"),
      resolvConf: "/etc/resolv.conf",
      // the host's disk and memory are shared with everything else: never evict or GC images
      evictionHard: {
        "memory.available": "1Mi",
        "nodefs.available": "0%",
        "imagefs.available": "0%",
        "nodefs.inodesFree": "0%",
      },
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      serializeImagePulls: false,
      registerNode: true,
      rotateCertificates: false,
      serverTLSBootstrap: false,
      nodeStatusReportFrequency: "1m",
      syncFrequency: "10s",
    }),
  );
  // kubelet in containerd's mount namespace: the volumes it mounts are the ones the containers see
  const kubelet = fleet.start(`${tag}-kubelet`, 4, "/usr/bin/nsenter", [
    `--mount=/proc/${containerd.pid}/ns/mnt`,
    "--",
    plan.kubelet,
    `--config=${config}`,
    `--kubeconfig=${kubeconfigFile}`,
    `--root-dir=${join(dir, "kubelet")}`,
    `--hostname-override=${name}`,
    "--cloud-provider=external",
    "--v=1",
  ]);
  await fleet.waitFor(
    `${tag} Ready`,
    [containerd, kubelet],
    async () => {
      const r = await api(`/api/v1/nodes/${name}`);
      if (r.status !== 200) return false;
      const n = JSON.parse(r.body) as { status?: { conditions?: { type: string; status: string }[] } };
      return n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
    },
    180_000,
  );
  return [containerd, kubelet];
}
