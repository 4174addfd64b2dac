// Real nodes (`hack/kube/up --real-nodes 1`): a pod scheduled on the real node runs a real process
// under that node's containerd and kubelet, and logs, exec (stdout and exit status), a copy into
// the pod (tar over exec, as `kubectl cp` does) and port-forward reach it through the API server;
// kwok keeps its own node and leaves the real one alone; `down` leaves no process, mount,
// network namespace, veth, bridge, iptables rule or cgroup behind. The file starts a fleet of
// its own (a folder from mkdtemp), since it checks what that fleet's `down` removes.
import { spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { request } from "node:http";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { CoreV1Api, Exec, KubeConfig, PortForward, type V1Pod, type V1Status } from "@kubernetes/client-node";
import t from "tap";
import { REAL_NODE_IMAGES } from "../../../hack/kube/images.ts";
import type { ClusterEntry } from "../../../hack/kube/paths.ts";
import { repoRoot } from "../../../hack/kube/paths.ts";
import { REAL_NODE_LABEL, type RealNodeRecord } from "../../../hack/kube/real-nodes.ts";
import { within } from "../../helpers/fleet.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const scratch = mkdtempSync(join(tmpdir(), "rlark-real-nodes-"));
const fleetDir = join(scratch, "fleet");
const env = { ...process.env, RLARK_FLEET_DIR: fleetDir };
const script = (name: string, args: string[]) =>
  spawnSync("bash", [join(repoRoot, "hack/kube", name), ...args], {
    env,
    stdio: ["ignore", "inherit", "inherit"],
  });

/** kubelet's own chains: host-wide, shared by every kubelet, gone when the last one stops. */
const KUBELET_CHAINS = /KUBE-(FIREWALL|KUBELET-CANARY|IPTABLES-HINT)/;

/**
 * The host's iptables rules and non-built-in chains (IPv4 and IPv6), to compare before and after;
 * kubelet's shared chains only when asked.
 */
function iptablesRules(withKubeletChains: boolean): string[] {
  return ["iptables-save", "ip6tables-save"].flatMap((tool) =>
    spawnSync(tool, [], { encoding: "utf8" })
      .stdout.split("\n")
      .filter(
        (l) =>
          l.startsWith("-A ") ||
          (l.startsWith(":") && !/^:(PREROUTING|INPUT|FORWARD|OUTPUT|POSTROUTING) /.test(l)),
      )
      .filter((l) => withKubeletChains || !KUBELET_CHAINS.test(l))
      .map((l) => `${tool}: ${l}`),
  );
}

const kubeletRunning = (): boolean =>
  readdirSync("/proc").some((e) => {
    try {
      return /(^|\/)kubelet$/.test(readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0")[0] ?? "");
    } catch {
      return false;
    }
  });

/** Mount points under `dir` in the mount namespace of `pid` (the host's, by default). */
const mountsUnder = (dir: string, pid: number | "self" = "self"): string[] =>
  readFileSync(`/proc/${pid}/mountinfo`, "utf8")
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((p) => p.startsWith(`${dir}/`));

/** PIDs whose command line names `text`, or whose network namespace is `netns` (net:[inode]). */
function processesWith(text: string, netns?: string): number[] {
  const pids: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${e}/cmdline`, "utf8").includes(text)) pids.push(Number(e));
      else if (netns && readlinkSync(`/proc/${e}/ns/net`) === netns) pids.push(Number(e));
    } catch {}
  }
  return pids;
}

const ifindex = (link: string): string => readFileSync(`/sys/class/net/${link}/ifindex`, "utf8").trim();

const cgroupDirs = (root: string): string[] =>
  readdirSync("/sys/fs/cgroup")
    .map((h) => join("/sys/fs/cgroup", h, root))
    .filter((d) => existsSync(d));

function collect(): { stream: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk);
      done();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString("utf8") };
}

/** Runs `command` in the pod through the API server's pods/exec; stdout, stderr, exit code. */
async function exec(
  kc: KubeConfig,
  pod: { namespace: string; name: string },
  command: string[],
  stdin: NodeJS.ReadableStream | null = null,
): Promise<{ stdout: string; stderr: string; code: number }> {
  const out = collect();
  const err = collect();
  const status = await within(
    `exec ${command.join(" ")}`,
    new Promise<V1Status>((resolve, reject) => {
      new Exec(kc)
        .exec(
          pod.namespace,
          pod.name,
          "main",
          command,
          out.stream,
          err.stream,
          stdin as never,
          false,
          resolve,
        )
        .catch(reject);
    }),
    60_000,
  );
  const cause = status.details?.causes?.find((c) => c.reason === "ExitCode");
  const code = status.status === "Success" ? 0 : Number(cause?.message ?? -1);
  return { stdout: out.text(), stderr: err.text(), code };
}

t.test("a pod on a real node runs for real, and down leaves nothing behind", async (t) => {
  const rulesBefore = iptablesRules(false);
  t.teardown(() => {
    if (existsSync(join(fleetDir, "state.json"))) script("down", []);
    // only once the fleet is down: rmSync must never walk into a node's mounts
    if (mountsUnder(scratch).length === 0) rmSync(scratch, { recursive: true, force: true });
  });
  const up = script("up", ["--clusters", "1", "--nodes", "1", "--real-nodes", "1"]);
  t.equal(up.status, 0, "hack/kube/up --real-nodes 1 succeeds");
  if (up.status !== 0) return;
  const [entry] = JSON.parse(readFileSync(join(fleetDir, "clusters.json"), "utf8")) as ClusterEntry[];
  const kc = new KubeConfig();
  kc.loadFromFile(entry!.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const state = JSON.parse(readFileSync(join(fleetDir, "state.json"), "utf8")) as {
    realNodeRecords: RealNodeRecord[];
    processes: { name: string; pid: number }[];
  };
  const [record] = state.realNodeRecords;
  t.ok(record?.cgroupRoot && record.bridge, "the real node's cgroup root and bridge are recorded");
  if (!record?.cgroupRoot || !record.bridge) return;

  // real and kwok nodes side by side, told apart by the label, each played by its own kubelet
  const nodes = (await core.listNode()).items;
  const real = nodes.filter((n) => n.metadata?.labels?.[REAL_NODE_LABEL] === "true");
  const kwok = nodes.filter((n) => n.metadata?.labels?.type === "kwok");
  t.same(
    real.map((n) => n.metadata?.name),
    ["real-0"],
    "one real node",
  );
  t.equal(kwok.length, 1, "one kwok node");
  t.match(
    real[0]?.status?.nodeInfo?.containerRuntimeVersion,
    /^containerd:\/\/1\./,
    "containerd runs the real node",
  );
  t.match(real[0]?.status?.nodeInfo?.kubeletVersion, /^v1\.34\./, "a real kubelet reports the real node");
  t.notMatch(
    JSON.stringify(real[0]?.metadata?.annotations ?? {}),
    /kwok/,
    "kwok did not take the real node over",
  );
  t.ok(
    kwok[0]?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
    "kwok still plays its node",
  );

  const namespace = "real-node-test";
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await waitFor(
    "the namespace's default ServiceAccount",
    () => core.readNamespacedServiceAccount({ namespace, name: "default" }).then(() => true),
    onKube,
  );
  const name = "web";
  const pod: V1Pod = {
    metadata: { name },
    spec: {
      nodeSelector: { [REAL_NODE_LABEL]: "true" },
      containers: [
        {
          name: "main",
          image: REAL_NODE_IMAGES.busybox,
          imagePullPolicy: "Never",
          command: [
            "sh",
            "-c",
            "echo started on $(hostname); mkdir -p /www; echo pong > /www/index.html; exec httpd -f -p 8080 -h /www",
          ],
        },
      ],
    },
  };
  await core.createNamespacedPod({ namespace, body: pod });
  const running = await waitFor(
    "the pod Running on the real node",
    async () => {
      const p = await core.readNamespacedPod({ namespace, name });
      return p.status?.phase === "Running" && p.status.containerStatuses?.[0]?.ready ? p : undefined;
    },
    onKube,
  );
  t.equal(running.spec?.nodeName, "real-0", "scheduled on the real node");
  t.match(running.status?.podIP, /^10\.250\.\d+\.\d+$/, "the pod has an address of its node's bridge subnet");

  // a real process on this host, in the real node's cgroups
  const httpd = processesWith(["httpd", "-f", "-p", "8080"].join("\0"));
  const inCgroup = cgroupDirs(record.cgroupRoot).some((d) =>
    spawnSync("find", [d, "-name", "cgroup.procs", "-exec", "cat", "{}", "+"], { encoding: "utf8" })
      .stdout.split("\n")
      .some((pid) => httpd.includes(Number(pid))),
  );
  t.ok(inCgroup, "the pod's httpd is a process on this host, inside the real node's cgroup root");

  const logs = await waitFor(
    "the container's log",
    async () => {
      const text = await core.readNamespacedPodLog({ namespace, name, container: "main" });
      return text.includes("started on") ? text : undefined;
    },
    onKube,
  );
  t.match(logs, `started on ${name}`, "logs come from the container's own output (pods/log)");

  const target = { namespace, name };
  const ok = await exec(kc, target, ["sh", "-c", "echo out-$((6 * 7)); echo err >&2"]);
  t.same([ok.code, ok.stdout, ok.stderr], [0, "out-42\n", "err\n"], "exec: stdout, stderr, status 0");
  const failed = await exec(kc, target, ["sh", "-c", "exit 7"]);
  t.equal(failed.code, 7, "exec: the command's exit status comes back");
  const netns = (await exec(kc, target, ["readlink", "/proc/1/ns/net"])).stdout.trim();
  t.match(netns, /^net:\[\d+\]$/, "the pod has a network namespace");
  t.not(netns, readlinkSync("/proc/self/ns/net"), "of its own");

  // copy a file in, as kubectl cp does: a tar stream into `tar xf -` over exec
  const src = join(scratch, "cp");
  mkdirSync(src);
  writeFileSync(join(src, "hello.txt"), "copied in\n");
  const tar = spawn("tar", ["-C", src, "-cf", "-", "hello.txt"], { stdio: ["ignore", "pipe", "inherit"] });
  const stdin = new PassThrough();
  tar.stdout.pipe(stdin);
  const untar = await exec(kc, target, ["tar", "xf", "-", "-C", "/tmp"], stdin);
  t.equal(untar.code, 0, "tar xf - in the pod succeeds");
  t.equal(
    (await exec(kc, target, ["cat", "/tmp/hello.txt"])).stdout,
    "copied in\n",
    "the copied file is there",
  );

  // port-forward: a local listener whose connections go to the pod's port 8080 (pods/portforward)
  const forward = new PortForward(kc);
  const sockets = new Set<import("node:net").Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    forward.portForward(namespace, name, [8080], socket, null, socket).catch(() => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  const port = (server.address() as import("node:net").AddressInfo).port;
  const body = await within(
    "an HTTP answer through port-forward",
    new Promise<string>((resolve, reject) => {
      request({ host: "127.0.0.1", port, path: "/index.html", agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
        res.on("error", reject);
      })
        .on("error", reject)
        .end();
    }),
    60_000,
  );
  t.equal(body, "pong\n", "port-forward: the pod's httpd answers");

  // what the real node made on the host, seen while it runs, then gone after down
  const veths = spawnSync("ip", ["-o", "link", "show", "master", record.bridge], { encoding: "utf8" })
    .stdout.split("\n")
    .filter(Boolean)
    .map((l) => (l.split(": ")[1] ?? "").split("@")[0] ?? "");
  t.ok(veths.length > 0, "the pod's veth is on the node's bridge");
  const bridgeIndex = ifindex(record.bridge);
  // the node's containerd and kubelet mount in a namespace of their own (docs/kube.md)
  const containerd = state.processes.find((p) => p.name.endsWith("real-0-containerd"))?.pid ?? 0;
  t.ok(mountsUnder(record.dir, containerd).length > 0, "the real node has mounts (volumes, rootfs, netns)");
  t.same(mountsUnder(record.dir), [], "in its own mount namespace: the host sees none of them");
  t.ok(cgroupDirs(record.cgroupRoot).length > 0, "the node's cgroup root exists");

  const down = script("down", []);
  t.equal(down.status, 0, "hack/kube/down succeeds");
  t.same(processesWith(fleetDir, netns), [], "no process of the fleet (nor in the pod's netns) is left");
  t.same(mountsUnder(fleetDir), [], "no mount under the fleet's folder is left");
  t.notOk(existsSync(fleetDir), "the fleet's folder is gone");
  t.same(cgroupDirs(record.cgroupRoot), [], "the node's cgroups are gone in every hierarchy");
  // by index: another fleet starting beside this test may take the freed name at once
  t.notOk(
    existsSync(`/sys/class/net/${record.bridge}`) && ifindex(record.bridge) === bridgeIndex,
    "the bridge is gone",
  );
  for (const veth of veths)
    t.notOk(spawnSync("ip", ["link", "show", veth]).status === 0, `veth ${veth} is gone`);
  t.same(iptablesRules(false), rulesBefore, "the iptables rules and chains are as they were");
  // kubelet's shared chains stay while another fleet's kubelet runs (a test beside this one)
  if (!kubeletRunning()) t.same(iptablesRules(true), rulesBefore, "and kubelet's own chains are gone");
  const links = existsSync("/var/log/containers") ? readdirSync("/var/log/containers") : [];
  t.notOk(
    links.some((f) => f.startsWith(`${name}_${namespace}_`)),
    "kubelet's /var/log/containers link for the pod is gone",
  );
});
