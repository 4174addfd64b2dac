// `node hack/bench/access/run.ts [bytes=1073741824] [rounds=1]`: SFTP download and `ssh -L` throughput
// through the hub's bastion and a process-runtime agent, against Debian's own sshd on this
// machine in the same run, with the same client and file: once with aes128-gcm forced on both,
// once with the client's default offer (each server then picks its own match). Prints MB/s and
// the ratio; with rounds > 1 the two alternate (hub first, then sshd first) and the best of each
// is compared, each round's own ratio printed too: on shared cores it is the least disturbed
// figure. Each figure comes with the CPU seconds per GB of the hub and agent and of the whole
// machine (every process on the path), and the ceiling that the latter sets on this machine's
// cores. Needs root (sshd), /usr/sbin/sshd and socat. Asserts nothing. The agent runs on its
// own thread (agent-worker.ts), as it runs in its own process when deployed; the -L source and
// reader are socat processes, off the hub's event loop; the hub polls git at its default
// interval (a 500 ms poll spawned git often enough to take 14 % of the hub's loop).
// The upper bound of each ssh2 hop alone is hops.ts.
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
import { machineBusySeconds, socatSink, startSshd, untilListening } from "../probes.ts";

const BYTES = Number(process.argv[2] ?? 1024 ** 3);
const ROUNDS = Number(process.argv[3] ?? 1);
const CIPHER = "aes128-gcm@openssh.com";
const POD = "bench-main-0";

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

  const hub = await startHub({
    dataDir: path.join(dir, "hub"),
    http: "127.0.0.1:0",
    ssh: "127.0.0.1:0",
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
    },
  });
  await new Promise((resolve, reject) => {
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

  // Debian's sshd on this machine, for the same client, key and file.
  const sshd = await startSshd(dir, userKey);
  children.push(sshd.child);
  const sshdPort = sshd.port;

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
  // The same cipher on both, then what each server picks from OpenSSH's default offer (the
  // client's first choice both speak: sshd takes chacha20-poly1305, the hub its own first match).
  const suites: [string, string[]][] = [
    [CIPHER, ["-c", CIPHER]],
    ["the client's default offer", []],
  ];
  const hubPort = Number(hub.sshAddress.split(":")[1]);
  const sftp = (port: number, login: string, remote: string, local: string, cipher: string[]) => {
    const batch = path.join(dir, "batch");
    writeFileSync(batch, `get ${remote} ${local}\n`);
    return timed("sftp", [...common, ...cipher, "-P", String(port), "-b", batch, `${login}@127.0.0.1`]);
  };
  const mb = BYTES / 1e6;
  /** Runs hub and sshd ROUNDS times, alternating which goes first; MB/s of each run. */
  const rounds = async (
    hub: () => Promise<number>,
    sshd: () => Promise<number>,
    after: () => Promise<void> = async () => {},
  ) => {
    const out = {
      hub: [] as number[],
      sshd: [] as number[],
      hubCpu: [] as number[],
      machineCpu: { hub: [] as number[], sshd: [] as number[] },
    };
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of round % 2 === 0 ? (["hub", "sshd"] as const) : (["sshd", "hub"] as const)) {
        const before = process.cpuUsage();
        const machineBefore = machineBusySeconds();
        out[side].push(mb / (await (side === "hub" ? hub() : sshd())));
        const used = process.cpuUsage(before);
        out.machineCpu[side].push((machineBusySeconds() - machineBefore) / (mb / 1000));
        // This process is the hub and the agent's thread; clients, sshd, socat and sftp-server are
        // other processes. CPU per GB hardly moves with other work on the machine, unlike MB/s.
        if (side === "hub") out.hubCpu.push((used.user + used.system) / 1e6 / (mb / 1000));
        await after();
      }
    }
    return out;
  };
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? 0;
  const cores = availableParallelism();
  const report = (title: string, result: Awaited<ReturnType<typeof rounds>>, note = "") => {
    const best = { hub: Math.max(...result.hub), sshd: Math.max(...result.sshd) };
    const each = result.hub.map((h, i) => (h / (result.sshd[i] ?? h)).toFixed(2)).join(" ");
    console.log(`== ${title} ==`);
    console.log(
      `hub+agent  ${best.hub.toFixed(1)} MB/s   (runs: ${result.hub.map((x) => x.toFixed(1)).join(" ")})`,
    );
    console.log(
      `sshd       ${best.sshd.toFixed(1)} MB/s   (runs: ${result.sshd.map((x) => x.toFixed(1)).join(" ")})`,
    );
    console.log(`ratio      ${(best.hub / best.sshd).toFixed(2)}x   (per round: ${each}) ${note}`);
    console.log(`hub+agent CPU ${median(result.hubCpu).toFixed(2)} s/GB, median of ${result.hubCpu.length}`);
    // Whole-machine CPU per GB counts every process on each path (clients, servers, sftp-server,
    // socat). Were every core busy with nothing but the hub's path, it could move at most
    // cores / that figure: the ceiling of its ratio on this machine, however its work is spread.
    const machine = { hub: median(result.machineCpu.hub), sshd: median(result.machineCpu.sshd) };
    const ceiling = (cores / machine.hub) * 1000;
    console.log(
      `machine CPU hub path ${machine.hub.toFixed(2)} s/GB, sshd path ${machine.sshd.toFixed(2)} s/GB; ` +
        `hub path with all ${cores} cores: at most ${ceiling.toFixed(0)} MB/s = ${(ceiling / best.sshd).toFixed(2)}x`,
    );
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
  for (const [name, cipher] of suites) {
    let intactAll = true;
    const result = await rounds(
      () => sftp(hubPort, `bench+${POD}`, "big.bin", copy, cipher),
      () => sftp(sshdPort, "root", file, copy, cipher),
      async () => {
        intactAll &&= await intact();
      },
    );
    report(`SFTP download of ${mb.toFixed(0)} MB (${name})`, result, `(sha256 intact: ${intactAll})`);
  }

  // ssh -L: the pod's port sends BYTES to whoever connects, and a reader counts them, both socat
  // processes: in this process they would take the hub's event loop from it.
  await untilListening(podPort, "the pod's port");
  const forward = async (port: number, login: string, target: string, cipher: string[]) => {
    const local = await freePort();
    const child = spawn(
      "ssh",
      [
        ...common,
        ...cipher,
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
        if (bytes !== 0) throw new Error(`forward received ${bytes} of ${BYTES} bytes`);
        await sleep(100);
      }
      throw new Error("ssh -L never listened");
    } finally {
      child.kill();
    }
  };
  for (const [name, cipher] of suites) {
    const result = await rounds(
      () => forward(hubPort, "bench", POD, cipher),
      () => forward(sshdPort, "root", "127.0.0.1", cipher),
    );
    report(`ssh -L, ${mb.toFixed(0)} MB through one connection (${name})`, result);
  }

  const stopped = new Promise((resolve) => agent.once("message", resolve));
  agent.postMessage("stop");
  await stopped;
  await hub.stop();
} finally {
  for (const child of children) child.kill();
  for (const server of servers) server.close();
  await rm(dir, { recursive: true, force: true });
}
