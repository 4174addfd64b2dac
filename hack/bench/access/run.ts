// `node hack/bench/access/run.ts [bytes=1073741824] [rounds=1]`: SFTP download and `ssh -L` throughput
// through the hub's bastion and a process-runtime agent, against Debian's own sshd on this
// machine and against an OpenSSH jump host (a second sshd, `sftp -J` / `ssh -J`: two sshd hops,
// as the bastion's path is two hops) in the same run, with the same client and file. The last
// two lines, `sftp: <r>× OpenSSH jump host` and `ssh -L: <r>× OpenSSH jump host` (aes128-gcm on
// every hop), are for scripts. Each is taken once with aes128-gcm forced on both,
// once with the client's default offer (each server then picks its own match). Prints MB/s and
// the ratios; with rounds > 1 the three rotate (which goes first) and the best of each
// is compared, each round's own ratio printed too: on shared cores it is the least disturbed
// figure. Each figure comes with the CPU seconds per GB of the hub and agent, of the jump host's
// sshd (with the per-connection processes it forked), and of the whole
// machine (every process on the path), and the ceiling that the latter sets on this machine's
// cores. Needs root (sshd), /usr/sbin/sshd and socat. Asserts nothing. The agent runs on its
// own thread (agent-worker.ts), as it runs in its own process when deployed; the -L source and
// reader are socat processes, off the hub's event loop; the hub polls git at its default
// interval (a 500 ms poll spawned git often enough to take 14 % of the hub's loop).
// The upper bound of each ssh2 hop alone is hops.ts.
// The hub also runs its Go SSH front (`rlark-net ssh-front`, ADR 0011; the binary
// hack/network/build-rlark-net builds, or $RLARK_NET_BIN): every transfer is taken a fourth way,
// through it ("front" below, its CPU counted with the hub's), and ends with two more lines,
// `sftp via ssh-front: <r>× OpenSSH jump host` and `ssh -L via ssh-front: <r>× OpenSSH jump host`.
// With the agent's byte hop (ADR 0011, third decision; on unless RLARK_BENCH_HOP=0) the front's
// `ssh -L` goes from the front's TLS data port to the agent's `rlark-net access-hop`, whose CPU is
// counted with the front path's too.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, mkdirSync, openSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:net";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { startHub } from "../../../operators/hub/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { freePort } from "../../../tests/helpers/free-port.ts";
import {
  cpuSeconds,
  cpuSecondsWithReaped,
  machineBusySeconds,
  socatSink,
  startSshd,
  untilListening,
  untilNoChildren,
} from "../probes.ts";

const BYTES = Number(process.argv[2] ?? 1024 ** 3);
const ROUNDS = Number(process.argv[3] ?? 1);
const CIPHER = "aes128-gcm@openssh.com";
const POD = "bench-main-0";
const HOP = process.env.RLARK_BENCH_HOP !== "0";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined): Promise<T> {
  for (let i = 0; i < 1200; i++) {
    const value = await check();
    if (value !== undefined) return value;
    await sleep(100);
  }
  throw new Error(`never happened: ${what}`);
}

async function sha256(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** Runs a client to its end, asynchronously: the hub and agent share this process's event loop. */
function timed(command: string, args: string[]): Promise<number> {
  const start = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "ignore", "inherit"] });
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0
        ? resolve(Number(process.hrtime.bigint() - start) / 1e9)
        : reject(new Error(`${command} exited ${code}`)),
    );
  });
}

const dir = await mkdtemp(path.join(tmpdir(), "rlark-bench-access-"));
const children: ChildProcess[] = [];
const servers: Server[] = [];
try {
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, "user")]);
  const userKey = execFileSync("ssh-keygen", ["-y", "-f", path.join(dir, "user")])
    .toString()
    .trim();

  // A repository: the local cluster, a user, a grant and a long-running pod. The pod is the
  // socat that sends BYTES to whoever connects to its port: a forward reaches only a port the
  // pod's own processes listen on (socat off the hub's event loop, as the reader is).
  const podPort = await freePort();
  const podCommand = [
    "socat",
    "-u",
    `OPEN:/dev/zero,readbytes=${BYTES}`,
    `TCP-LISTEN:${podPort},bind=127.0.0.1,reuseaddr,fork`,
  ];
  const repo = path.join(dir, "repo");
  mkdirSync(repo);
  writeFileSync(
    path.join(repo, "all.yaml"),
    `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: local }
spec: { runtime: process }
---
apiVersion: rlinf.io/v1alpha1
kind: User
metadata: { name: bench }
spec: { roles: [user], sshPublicKeys: [${JSON.stringify(userKey)}] }
---
apiVersion: rlinf.io/v1alpha1
kind: AccessPolicy
metadata: { name: bench }
spec: { subjects: { users: [bench] }, verbs: [files, forward] }
---
apiVersion: rlinf.io/v1alpha1
kind: Job
metadata: { name: bench }
spec:
  tasks:
    - name: main
      role: Actor
      agentType: Raw
      raw: { kind: Deployment, command: ${JSON.stringify(podCommand)} }
`,
  );
  const git = (...args: string[]) => execFileSync("git", ["-C", repo, ...args], { stdio: "ignore" });
  git("init", "-q", "-b", "main");
  git("-c", "user.name=bench", "-c", "user.email=bench@localhost", "add", ".");
  git("-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", "bench");

  const rlarkNet =
    process.env.RLARK_NET_BIN ?? execFileSync("bash", ["hack/network/build-rlark-net"]).toString().trim();
  const hub = await startHub({
    dataDir: path.join(dir, "hub"),
    http: "127.0.0.1:0",
    ssh: "127.0.0.1:0",
    sshFront: "127.0.0.1:0",
    ...(HOP ? { sshFrontHop: "127.0.0.1:0" } : {}),
    rlarkNet,
    repo: `file://${repo}`,
    branch: "main",
    logger: silentLogger,
  });
  await until(
    "cluster declared",
    async () => (await hub.store.get("Cluster", undefined, "local")) ?? undefined,
  );
  const { token } = await hub.pki.enrollment.createToken({ cluster: "local", ttlMs: 60_000 });
  const agent = new Worker(new URL("./agent-worker.ts", import.meta.url), {
    workerData: {
      hub: hub.sshAddress,
      token,
      caHash: hub.caFingerprint,
      stateDir: path.join(dir, "state"),
      credentials: path.join(dir, "agent.json"),
      ...(HOP ? { accessHop: rlarkNet } : {}),
    },
  });
  const { hopPid } = await new Promise<{ hopPid: number }>((resolve, reject) => {
    agent.once("message", resolve);
    agent.once("error", reject);
  });
  await until("pod running", async () => {
    const pod = await hub.store.get("Pod", "agent-local", POD);
    return (pod?.status as { phase?: string } | undefined)?.phase === "Running" ? true : undefined;
  });
  const podDir = path.join(dir, "state", "work", "agent-local_bench-main");
  const file = path.join(podDir, "big.bin");
  execFileSync("head", ["-c", String(BYTES), "/dev/urandom"], {
    stdio: ["ignore", openSync(file, "w"), "inherit"],
  });

  // Debian's sshd on this machine, for the same client, key and file; and a second sshd as the
  // OpenSSH jump host in front of it (`-J`), what people run instead of a bastion product.
  const sshd = await startSshd(dir, userKey);
  children.push(sshd.child);
  const sshdPort = sshd.port;
  const sshdPid = sshd.child.pid as number;
  const jumpDir = path.join(dir, "jump");
  mkdirSync(jumpDir);
  const jump = await startSshd(jumpDir, userKey);
  children.push(jump.child);
  const jumpPid = jump.child.pid as number;

  const common = [
    "-F",
    "/dev/null",
    "-o",
    "StrictHostKeyChecking=no",
    "-o",
    `UserKnownHostsFile=${path.join(dir, "kh")}`,
    "-o",
    "BatchMode=yes",
    "-o",
    "LogLevel=ERROR",
    "-i",
    path.join(dir, "user"),
  ];
  /**
   * `-J` hands the jump host's connection to a second ssh, which gets `-F` and nothing else of
   * the command line: options (the cipher among them) go in a config file, read by both.
   */
  const jumpConfig = (cipher: string[]) => {
    const file = path.join(dir, `ssh_config${cipher.length ? "-cipher" : ""}`);
    writeFileSync(
      file,
      [
        "Host *",
        "  StrictHostKeyChecking no",
        `  UserKnownHostsFile ${path.join(dir, "kh")}`,
        "  BatchMode yes",
        "  LogLevel ERROR",
        `  IdentityFile ${path.join(dir, "user")}`,
        ...(cipher.length ? [`  Ciphers ${cipher[1]}`] : []),
        "",
      ].join("\n"),
    );
    return ["-F", file, "-J", `root@127.0.0.1:${jump.port}`];
  };
  // The same cipher on both, then what each server picks from OpenSSH's default offer (the
  // client's first choice both speak: sshd takes chacha20-poly1305, the hub its own first match).
  const suites: [string, string[]][] = [
    [CIPHER, ["-c", CIPHER]],
    ["the client's default offer", []],
  ];
  const hubPort = Number(hub.sshAddress.split(":")[1]);
  const front = hub.sshFront;
  if (!front) throw new Error("the hub started no SSH front");
  const frontPort = Number(front.address.split(":")[1]);
  /** The Go processes of the front path: the SSH front and, with the hop, the agent's hop. */
  const hopCpu = () => (hopPid ? cpuSeconds(hopPid) : 0);
  const frontCpu = () => cpuSeconds(front.process.pid ?? 0) + hopCpu();
  console.log(`agent's byte hop: ${hopPid ? `on (rlark-net access-hop, pid ${hopPid})` : "off"}`);
  const sftp = (port: number, login: string, remote: string, local: string, options: string[]) => {
    const batch = path.join(dir, "batch");
    writeFileSync(batch, `get ${remote} ${local}\n`);
    return timed("sftp", [...options, "-P", String(port), "-b", batch, `${login}@127.0.0.1`]);
  };
  const mb = BYTES / 1e6;
  type Side = "hub" | "front" | "sshd" | "jump";
  const SIDES: Side[] = ["hub", "front", "sshd", "jump"];
  /** Runs each side ROUNDS times, rotating which goes first; MB/s and CPU-s/GB of each run. */
  const rounds = async (
    run: Record<Side, () => Promise<number>>,
    after: () => Promise<void> = async () => {},
  ) => {
    const out = {
      mbs: { hub: [], front: [], sshd: [], jump: [] } as Record<Side, number[]>,
      hubCpu: [] as number[],
      frontCpu: [] as number[],
      /** rlark-net ssh-front's (and access-hop's) own share of frontCpu. */
      frontGoCpu: [] as number[],
      /** rlark-net access-hop's alone (the agent's side). */
      hopGoCpu: [] as number[],
      jumpCpu: [] as number[],
      /** Both sshd of the jump path (the jump host and the one behind it), and sshd alone. */
      jumpPathCpu: [] as number[],
      sshdCpu: [] as number[],
      machineCpu: { hub: [], front: [], sshd: [], jump: [] } as Record<Side, number[]>,
    };
    for (let round = 0; round < ROUNDS; round++) {
      const order = [...SIDES.slice(round % SIDES.length), ...SIDES.slice(0, round % SIDES.length)];
      for (const side of order) {
        const before = process.cpuUsage();
        const frontBefore = frontCpu();
        const hopBefore = hopCpu();
        const jumpBefore = cpuSecondsWithReaped(jumpPid);
        const sshdBefore = cpuSecondsWithReaped(sshdPid);
        const machineBefore = machineBusySeconds();
        out.mbs[side].push(mb / (await run[side]()));
        const used = process.cpuUsage(before);
        out.machineCpu[side].push((machineBusySeconds() - machineBefore) / (mb / 1000));
        // This process is the hub and the agent's thread; clients, sshd, socat and sftp-server are
        // other processes. CPU per GB hardly moves with other work on the machine, unlike MB/s.
        if (side === "hub") out.hubCpu.push((used.user + used.system) / 1e6 / (mb / 1000));
        if (side === "front") {
          const goUsed = frontCpu() - frontBefore;
          out.frontCpu.push(((used.user + used.system) / 1e6 + goUsed) / (mb / 1000));
          out.frontGoCpu.push(goUsed / (mb / 1000));
          out.hopGoCpu.push((hopCpu() - hopBefore) / (mb / 1000));
        }
        if (side === "sshd" || side === "jump") {
          // sshd's per-connection processes count once they have exited and been reaped.
          await untilNoChildren(jumpPid);
          await untilNoChildren(sshdPid);
          const jumpUsed = (cpuSecondsWithReaped(jumpPid) - jumpBefore) / (mb / 1000);
          const sshdUsed = (cpuSecondsWithReaped(sshdPid) - sshdBefore) / (mb / 1000);
          if (side === "jump") {
            out.jumpCpu.push(jumpUsed);
            out.jumpPathCpu.push(jumpUsed + sshdUsed);
          } else out.sshdCpu.push(sshdUsed);
        }
        await after();
      }
    }
    return out;
  };
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? 0;
  const cores = availableParallelism();
  const report = (title: string, result: Awaited<ReturnType<typeof rounds>>, note = "") => {
    const best = {
      hub: Math.max(...result.mbs.hub),
      front: Math.max(...result.mbs.front),
      sshd: Math.max(...result.mbs.sshd),
      jump: Math.max(...result.mbs.jump),
    };
    const each = (other: Side, side: Side = "hub") =>
      result.mbs[side].map((h, i) => (h / (result.mbs[other][i] ?? h)).toFixed(2)).join(" ");
    const runs = (side: Side) => result.mbs[side].map((x) => x.toFixed(1)).join(" ");
    console.log(`== ${title} ==`);
    console.log(`hub+agent  ${best.hub.toFixed(1)} MB/s   (runs: ${runs("hub")})`);
    console.log(`front      ${best.front.toFixed(1)} MB/s   (runs: ${runs("front")})`);
    console.log(`sshd       ${best.sshd.toFixed(1)} MB/s   (runs: ${runs("sshd")})`);
    console.log(`jump+sshd  ${best.jump.toFixed(1)} MB/s   (runs: ${runs("jump")})`);
    console.log(
      `ratio      ${(best.hub / best.sshd).toFixed(2)}x sshd   (per round: ${each("sshd")}) ${note}`,
    );
    console.log(`ratio      ${(best.hub / best.jump).toFixed(2)}x jump host   (per round: ${each("jump")})`);
    console.log(
      `front      ${(best.front / best.jump).toFixed(2)}x jump host   (per round: ${each("jump", "front")}), ` +
        `CPU s/GB hub+agent+Go ${median(result.frontCpu).toFixed(2)} (Go alone ${median(result.frontGoCpu).toFixed(2)}, of which access-hop ${median(result.hopGoCpu).toFixed(2)}, ` +
        `hub+agent Node ${median(result.frontCpu.map((c, i) => c - (result.frontGoCpu[i] ?? 0))).toFixed(2)})`,
    );
    console.log(
      `CPU s/GB   hub+agent ${median(result.hubCpu).toFixed(2)}, jump host's sshd ${median(result.jumpCpu).toFixed(2)}, ` +
        `both sshd of the jump path ${median(result.jumpPathCpu).toFixed(2)}, sshd alone ${median(result.sshdCpu).toFixed(2)} ` +
        `(medians of ${result.hubCpu.length})`,
    );
    // Whole-machine CPU per GB counts every process on each path (clients, servers, sftp-server,
    // socat). Were every core busy with nothing but the hub's path, it could move at most
    // cores / that figure: the ceiling of its ratio on this machine, however its work is spread.
    const machine = {
      hub: median(result.machineCpu.hub),
      front: median(result.machineCpu.front),
      sshd: median(result.machineCpu.sshd),
      jump: median(result.machineCpu.jump),
    };
    const ceiling = (cores / machine.hub) * 1000;
    console.log(
      `machine CPU hub path ${machine.hub.toFixed(2)} s/GB, sshd path ${machine.sshd.toFixed(2)} s/GB, ` +
        `jump path ${machine.jump.toFixed(2)} s/GB, front path ${machine.front.toFixed(2)} s/GB; ` +
        `hub path with all ${cores} cores: at most ${ceiling.toFixed(0)} MB/s = ${(ceiling / best.sshd).toFixed(2)}x sshd`,
    );
    return { hub: best.hub / best.jump, front: best.front / best.jump };
  };
  const want = await sha256(file);
  // What the hub and agent spend with nothing to carry: it is in every CPU-per-GB figure too.
  const rest = process.cpuUsage();
  await sleep(5000);
  const restUsed = process.cpuUsage(rest);
  console.log(`hub+agent at rest: ${((restUsed.user + restUsed.system) / 5e4).toFixed(1)} % of a core`);
  const copy = path.join(dir, "copy.bin");
  const intact = async () => {
    const same = (await sha256(copy)) === want;
    await rm(copy);
    return same;
  };
  // The lines a script reads: the hub against the jump host with the same cipher on every hop.
  const summary: string[] = [];
  for (const [name, cipher] of suites) {
    let intactAll = true;
    const result = await rounds(
      {
        hub: () => sftp(hubPort, `bench+${POD}`, "big.bin", copy, [...common, ...cipher]),
        front: () => sftp(frontPort, `bench+${POD}`, "big.bin", copy, [...common, ...cipher]),
        sshd: () => sftp(sshdPort, "root", file, copy, [...common, ...cipher]),
        jump: () => sftp(sshdPort, "root", file, copy, jumpConfig(cipher)),
      },
      async () => {
        intactAll &&= await intact();
      },
    );
    const ratio = report(
      `SFTP download of ${mb.toFixed(0)} MB (${name})`,
      result,
      `(sha256 intact: ${intactAll})`,
    );
    if (name === CIPHER)
      summary.push(
        `sftp: ${ratio.hub.toFixed(2)}× OpenSSH jump host`,
        `sftp via ssh-front: ${ratio.front.toFixed(2)}× OpenSSH jump host`,
      );
  }

  // ssh -L: the pod's port sends BYTES to whoever connects, and a reader counts them, both socat
  // processes: in this process they would take the hub's event loop from it.
  await untilListening(podPort, "the pod's port");
  const forward = async (port: number, login: string, target: string, options: string[]) => {
    const local = await freePort();
    const child = spawn(
      "ssh",
      [
        ...options,
        "-N",
        "-o",
        "ExitOnForwardFailure=yes",
        "-p",
        String(port),
        "-L",
        `${local}:${target}:${podPort}`,
        `${login}@127.0.0.1`,
      ],
      { stdio: "ignore" },
    );
    children.push(child);
    try {
      // The first connection that gets bytes is the measured one (earlier ones met no listener).
      for (let i = 0; i < 600; i++) {
        const { seconds, bytes } = await socatSink(local);
        if (bytes === BYTES) return seconds;
        if (bytes !== 0) throw new Error(`forward through port ${port} received ${bytes} of ${BYTES} bytes`);
        await sleep(100);
      }
      throw new Error("ssh -L never listened");
    } finally {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill();
      await exited;
    }
  };
  for (const [name, cipher] of suites) {
    const result = await rounds({
      hub: () => forward(hubPort, "bench", POD, [...common, ...cipher]),
      front: () => forward(frontPort, "bench", POD, [...common, ...cipher]),
      sshd: () => forward(sshdPort, "root", "127.0.0.1", [...common, ...cipher]),
      jump: () => forward(sshdPort, "root", "127.0.0.1", jumpConfig(cipher)),
    });
    const ratio = report(`ssh -L, ${mb.toFixed(0)} MB through one connection (${name})`, result);
    if (name === CIPHER)
      summary.push(
        `ssh -L: ${ratio.hub.toFixed(2)}× OpenSSH jump host`,
        `ssh -L via ssh-front: ${ratio.front.toFixed(2)}× OpenSSH jump host`,
      );
  }
  for (const line of summary) console.log(line);

  const stopped = new Promise((resolve) => agent.once("message", resolve));
  agent.postMessage("stop");
  await stopped;
  await hub.stop();
} finally {
  for (const child of children) child.kill();
  for (const server of servers) server.close();
  await rm(dir, { recursive: true, force: true });
}
