// Domain pod networking, in one run (as root): TCP throughput (iperf3, one stream) and connect
// latency (connect + one-byte echo, Python client) between two network namespaces over
//   1. direct TCP on a veth,
//   2. OpenSSH `ssh -L`, one hop, aes128-gcm (Debian sshd on a loopback port with a temp config),
//   3. our full path: sidecar -> nodeserver -> hub relay -> nodeserver -> sidecar (two clusters;
//      TLS between the two nodeservers, the hub joining it: ADR 0007),
//   4. our same-cluster path: sidecar -> nodeserver -> sidecar.
// Prints MB/s, connect p50/p99 and the ratio of each to OpenSSH -L, then the CPU seconds each
// process of a path spent per GB moved during its iperf3 run.
//
//   node_modules/.bin/node hack/bench/network/run.ts [seconds=5] [connects=300]
// RLARK_TEST_RELAY_ENGINE=node runs the hub's relay in its own process (default: rlark-net relay);
// RLARK_TEST_DATA_ENGINE=go runs the nodeservers' bytes in rlark-net nodeserver-data.
import { type ChildProcess, execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type BedPod, DomainBed } from "../../../tests/helpers/domain-net.ts";
import { waitFor } from "../../../tests/helpers/wait-for.ts";
import { CONNECT_PROBE, cpuSeconds, echoServerPython, SSHD_FORWARDING, writeSshdConfig } from "../probes.ts";

const seconds = Number(process.argv[2] ?? 5);
const connects = Number(process.argv[3] ?? 300);

interface Row {
  path: string;
  mbps: number;
  p50: number;
  p99: number;
  /** CPU seconds per GB moved during the iperf3 run, per process of the path. */
  cpu: Record<string, number>;
}

/** The processes named `comm` in a pod's network namespace. */
function podProcesses(pod: BedPod, comm: string): number[] {
  return execFileSync("ip", ["netns", "pids", pod.netns], { encoding: "utf8" })
    .split("\n")
    .filter(Boolean)
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === comm;
      } catch {
        return false;
      }
    });
}

async function measure(
  name: string,
  client: BedPod,
  ip: string,
  iperfPort: number,
  echoPort: number,
  processes: () => Record<string, number[]> = () => ({}),
): Promise<Row> {
  const running = client.run("iperf3", ["-c", ip, "-p", String(iperfPort), "-t", String(seconds), "-J"]);
  // Sampled once the stream is up, so per-connection processes (sshd's child) exist.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const pids = processes();
  const before = Object.fromEntries(
    Object.entries(pids).map(([k, list]) => [k, list.reduce((n, p) => n + cpuSeconds(p), 0)]),
  );
  const json = JSON.parse(await running);
  const bytes = json.end.sum_received.bytes;
  const mbps = bytes / json.end.sum_received.seconds / 1e6;
  const cpu = Object.fromEntries(
    Object.entries(pids).map(([k, list]) => [
      k,
      (list.reduce((n, p) => n + cpuSeconds(p), 0) - (before[k] ?? 0)) / (bytes / 1e9),
    ]),
  );
  const [p50, p99] = (
    await client.run("python3", ["-c", CONNECT_PROBE, ip, String(echoPort), String(connects)])
  )
    .trim()
    .split(" ")
    .map(Number) as [number, number];
  const row = { path: name, mbps, p50, p99, cpu };
  console.error(
    `${name}: ${mbps.toFixed(0)} MB/s, connect p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms`,
  );
  return row;
}

function listening(pod: BedPod, port: number) {
  return waitFor(
    `:${port} in ${pod.name}`,
    () => pod.exec("ss", ["-Htln", `sport = :${port}`]).includes(`:${port}`),
    {
      attempts: 400,
      everyMs: 25,
    },
  );
}

async function main(): Promise<void> {
  const bed = new DomainBed();
  const sshDir = mkdtempSync(path.join(tmpdir(), "rlark-bench-ssh-"));
  const servers: ChildProcess[] = [];
  try {
    await bed.start();
    await bed.domain("bench", "100.96.0.0/24");
    bed.startNodeserver("c1");
    bed.startNodeserver("c2");
    const a = await bed.pod("a", "c1", "bench", "100.96.0.10");
    const b = await bed.pod("b", "c2", "bench", "100.96.0.20");
    const c = await bed.pod("c", "c1", "bench", "100.96.0.30");
    await bed.publish();
    for (const pod of [a, b, c]) bed.startSidecar(pod);
    await bed.ready();
    for (const pod of [b, c]) {
      servers.push(
        pod.spawn("iperf3", ["-s", "-p", "5201"]),
        pod.spawn("python3", ["-c", echoServerPython("0.0.0.0", 7000)]),
      );
      await listening(pod, 5201);
      await listening(pod, 7000);
    }

    // A veth pair straight between A's and B's namespaces: the direct path, and the hop ssh -L takes.
    const [ifA, ifB] = [`${bed.prefix}da`, `${bed.prefix}db`];
    const [ipA, ipB] = ["192.168.250.1", "192.168.250.2"];
    execFileSync("ip", [
      "link",
      "add",
      ifA,
      "netns",
      a.netns,
      "type",
      "veth",
      "peer",
      "name",
      ifB,
      "netns",
      b.netns,
    ]);
    a.exec("ip", ["addr", "add", `${ipA}/30`, "dev", ifA]);
    b.exec("ip", ["addr", "add", `${ipB}/30`, "dev", ifB]);
    a.exec("ip", ["link", "set", ifA, "up"]);
    b.exec("ip", ["link", "set", ifB, "up"]);

    // OpenSSH: sshd in B's namespace, `ssh -L` from A's to it over the veth.
    chmodSync(sshDir, 0o700);
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(sshDir, "user")]);
    const config = writeSshdConfig(
      sshDir,
      "0.0.0.0:2290",
      readFileSync(path.join(sshDir, "user.pub"), "utf8"),
      SSHD_FORWARDING,
    );
    servers.push(b.spawn("/usr/sbin/sshd", ["-D", "-e", "-f", config]));
    await listening(b, 2290);
    const sshArgs = [
      "-N",
      "-i",
      path.join(sshDir, "user"),
      "-o",
      "StrictHostKeyChecking=no",
      "-o",
      "UserKnownHostsFile=/dev/null",
      "-o",
      "Ciphers=aes128-gcm@openssh.com",
      "-o",
      "LogLevel=ERROR",
      "-p",
      "2290",
    ];
    servers.push(
      a.spawn("ssh", [
        ...sshArgs,
        "-L",
        "127.0.0.1:15201:127.0.0.1:5201",
        "-L",
        "127.0.0.1:17000:127.0.0.1:7000",
        `root@${ipB}`,
      ]),
    );
    await listening(a, 15201);
    await listening(a, 17000);

    const nodeserver = (cluster: string) => [bed.nodeservers.get(cluster)?.pid as number];
    // With --data-engine go (RLARK_TEST_DATA_ENGINE=go): the nodeserver's rlark-net nodeserver-data.
    const dataEngine = (cluster: string) =>
      readFileSync(`/proc/${nodeserver(cluster)[0]}/task/${nodeserver(cluster)[0]}/children`, "utf8")
        .split(" ")
        .filter(Boolean)
        .map(Number)
        .filter((pid) => readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "rlark-net");
    const goRelay = bed.hub.domainRelay?.goEngine()?.pid;
    const rows = [
      await measure("direct TCP (veth)", a, ipB, 5201, 7000),
      await measure("OpenSSH ssh -L, aes128-gcm", a, "127.0.0.1", 15201, 17000, () => ({
        ssh: podProcesses(a, "ssh"),
        sshd: podProcesses(b, "sshd"),
      })),
      await measure("rlark cross-cluster (via hub relay)", a, b.vip as string, 5201, 7000, () => ({
        "rlark-net (source)": podProcesses(a, "rlark-net"),
        "nodeserver c1": nodeserver("c1"),
        ...(dataEngine("c1").length > 0 ? { "rlark-net data c1": dataEngine("c1") } : {}),
        "hub (this process)": [process.pid],
        // With the Go engine (the default) the relay's bytes are spliced by `rlark-net relay`.
        ...(goRelay ? { "rlark-net relay (hub)": [goRelay] } : {}),
        "nodeserver c2": nodeserver("c2"),
        ...(dataEngine("c2").length > 0 ? { "rlark-net data c2": dataEngine("c2") } : {}),
        "rlark-net (target)": podProcesses(b, "rlark-net"),
      })),
      await measure("rlark same-cluster", a, c.vip as string, 5201, 7000, () => ({
        "rlark-net (source)": podProcesses(a, "rlark-net"),
        "nodeserver c1": nodeserver("c1"),
        "rlark-net (target)": podProcesses(c, "rlark-net"),
      })),
    ];
    const ssh = rows[1] as Row;
    console.log(`\n${seconds} s of one TCP stream each; ${connects} connects (connect + 1-byte echo)\n`);
    console.log("| path | MB/s | × OpenSSH -L | connect p50 ms | connect p99 ms |");
    console.log("|---|---|---|---|---|");
    for (const r of rows)
      console.log(
        `| ${r.path} | ${r.mbps.toFixed(0)} | ${(r.mbps / ssh.mbps).toFixed(2)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} |`,
      );
    // On shared cores each process of a path gets a share of CPU: throughput follows the CPU a
    // byte costs along the whole path (docs/adr/0007-domain-data-path.md).
    console.log("\n| path | CPU seconds per GB moved, by process | total |");
    console.log("|---|---|---|");
    for (const r of rows.filter((row) => Object.keys(row.cpu).length > 0)) {
      const parts = Object.entries(r.cpu).map(([k, v]) => `${k} ${v.toFixed(2)}`);
      const total = Object.values(r.cpu).reduce((n, v) => n + v, 0);
      console.log(`| ${r.path} | ${parts.join(", ")} | ${total.toFixed(2)} |`);
    }
    // The two figures issue 25 targets, one line each so a script can read them.
    const cross = rows[2] as Row;
    const hubShare = Object.entries(cross.cpu)
      .filter(([k]) => k.includes("hub"))
      .reduce((n, [, v]) => n + v, 0);
    console.log(
      `\nrelay engine: ${goRelay ? "go" : "node"}; nodeserver data engine: ${dataEngine("c1").length > 0 ? "go" : "node"}`,
    );
    console.log(`cross-cluster: ${(cross.mbps / ssh.mbps).toFixed(2)}× OpenSSH -L`);
    console.log(`hub: ${hubShare.toFixed(2)} CPU-s/GB`);
    console.log(`cross-cluster connect p99: ${cross.p99.toFixed(2)} ms`);
  } finally {
    for (const s of servers) s.kill();
    await bed.close();
    rmSync(sshDir, { recursive: true, force: true });
  }
}

await main();
