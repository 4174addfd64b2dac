// `node hack/bench/access/hops.ts [bytes=268435456] [rounds=2]`: the upper bound of each ssh2 hop
// of the bastion path, alone, per cipher suite both OpenSSH and ssh2 speak, in the same run as
// this machine's sshd (root, Debian's /usr/sbin/sshd). Prints MB/s and ratios; asserts nothing.
//
//   A  OpenSSH `ssh -L` → ssh2 server → local TCP source   (the hub's user side, no agent)
//      against OpenSSH `ssh -L` → sshd → the same source
//   B  ssh2 server ← ssh2 client ← local TCP source         (the agent tunnel alone: the server
//      opens a stream channel, the client on its own thread pipes the source into it)
//   C  OpenSSH `ssh -L` → ssh2 server → ssh2 client → source (both hops as hub and agent relay
//      them, with none of our code in between: the best an ssh2-based path can do)
//
// Each is run with ssh2's sockets as they were (one write per packet) and with writes coalesced
// per tick (operators/lib/tunnel/coalesce-writes.ts). The source and the sink are socat processes,
// so the ssh2 thread does only SSH work. The suite's order alternates between rounds.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import ssh2, { type CipherAlgorithm, type Connection, type MacAlgorithm } from "ssh2";
import { coalesceWrites } from "../../../operators/lib/tunnel/index.ts";
import { freePort } from "../../../tests/helpers/free-port.ts";
import { socatSink, startSshd, untilListening } from "../probes.ts";

const BYTES = Number(process.argv[2] ?? 256 * 1024 ** 2);
const ROUNDS = Number(process.argv[3] ?? 2);
const MB = BYTES / 1e6;

/** Strong suites both ends speak: AEAD ciphers, or CTR with an encrypt-then-MAC SHA-2 MAC. */
const SUITES: { cipher: CipherAlgorithm; mac: MacAlgorithm }[] = [
  { cipher: "aes128-gcm@openssh.com", mac: "hmac-sha2-256-etm@openssh.com" },
  { cipher: "aes256-gcm@openssh.com", mac: "hmac-sha2-256-etm@openssh.com" },
  { cipher: "chacha20-poly1305@openssh.com", mac: "hmac-sha2-256-etm@openssh.com" },
  { cipher: "aes128-ctr", mac: "hmac-sha2-256-etm@openssh.com" },
  { cipher: "aes128-ctr", mac: "hmac-sha2-512-etm@openssh.com" },
];
const aead = (cipher: string) => /gcm|poly1305/.test(cipher);
const label = (s: { cipher: string; mac: string }) => (aead(s.cipher) ? s.cipher : `${s.cipher}+${s.mac}`);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const dir = await mkdtemp(path.join(tmpdir(), "rlark-bench-hops-"));
const children: ChildProcess[] = [];
const servers: Server[] = [];
try {
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, "user")]);
  const userKey = execFileSync("ssh-keygen", ["-y", "-f", path.join(dir, "user")]).toString();
  const hostKey = ssh2.utils.generateKeyPairSync("ed25519").private;
  const clientKey = ssh2.utils.generateKeyPairSync("ed25519").private;

  // The source: BYTES of zeros to every connection (no compression anywhere, so zeros will do).
  const sourcePort = await freePort();
  children.push(
    spawn(
      "socat",
      ["-u", `OPEN:/dev/zero,readbytes=${BYTES}`, `TCP-LISTEN:${sourcePort},bind=127.0.0.1,reuseaddr,fork`],
      { stdio: "ignore" },
    ),
  );
  await untilListening(sourcePort, "the socat source");

  // sshd for the OpenSSH baseline of hop A.
  const sshd = await startSshd(dir, userKey);
  children.push(sshd.child);
  const sshdPort = sshd.port;

  /** An ssh2 server limited to one suite; `tcpip` to the source, stream channels to its client. */
  const ssh2Server = async (suite: { cipher: CipherAlgorithm; mac: MacAlgorithm }, coalesce: boolean) => {
    let agent: Connection | undefined;
    const relay = { on: false };
    let agentReady: () => void = () => {};
    const ready = new Promise<void>((resolve) => {
      agentReady = resolve;
    });
    const ssh = new ssh2.Server(
      { hostKeys: [hostKey], algorithms: { cipher: [suite.cipher], hmac: [suite.mac] } },
      (conn) => {
        conn.on("error", () => {});
        conn.on("authentication", (ctx) => ctx.accept());
        conn.on("tcpip", (accept, reject, info) => {
          // Hop C: through the connected ssh2 client, as the hub relays a forward to an agent.
          if (agent && relay.on) {
            agent.forwardOut("bench", 1, "127.0.0.1", 0, (err, up) => {
              if (err) return reject();
              const channel = accept();
              up.pipe(channel).pipe(up);
              channel.on("close", () => up.destroy());
            });
            return;
          }
          const target = connect(info.destPort, "127.0.0.1");
          target.setNoDelay(true);
          target.once("error", () => reject());
          target.once("connect", () => {
            const channel = accept();
            target.pipe(channel).pipe(target);
            channel.on("close", () => target.destroy());
          });
        });
        conn.on("request", (accept, _reject, name) => {
          // As the hub answers: the client's forwardIn(…, 0) is bound to port 1.
          (accept as ((port?: number) => void) | undefined)?.(1);
          if (name === "tcpip-forward") {
            agent = conn;
            setImmediate(agentReady);
          }
        });
      },
    );
    const sockets = new Set<Socket>();
    const net = createServer((socket) => {
      sockets.add(socket);
      socket.setNoDelay(true);
      if (coalesce) coalesceWrites(socket);
      ssh.injectSocket(socket);
    });
    servers.push(net);
    await new Promise<void>((resolve) => net.listen(0, "127.0.0.1", resolve));
    return {
      port: (net.address() as AddressInfo).port,
      relay,
      /** Hop B: one stream channel to the connected ssh2 client, read to its end. */
      async pull(): Promise<number> {
        await ready;
        const start = process.hrtime.bigint();
        const bytes = await new Promise<number>((resolve, reject) => {
          agent?.forwardOut("bench", 1, "127.0.0.1", 0, (err, channel) => {
            if (err) return reject(err);
            let n = 0;
            channel.on("data", (d: Buffer) => {
              n += d.length;
            });
            channel.once("end", () => {
              channel.destroy();
              resolve(n);
            });
          });
        });
        if (bytes !== BYTES) throw new Error(`hop B received ${bytes} of ${BYTES} bytes`);
        return Number(process.hrtime.bigint() - start) / 1e9;
      },
      close: () => {
        for (const socket of sockets) socket.destroy();
        return new Promise<void>((resolve) => net.close(() => resolve()));
      },
    };
  };

  /** Hop A: one `ssh -L` connection pulled to its end; seconds. */
  const forward = async (port: number, suite: { cipher: string; mac: string }): Promise<number> => {
    const local = await freePort();
    const child = spawn(
      "ssh",
      [
        ...["-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"],
        ...["-o", "BatchMode=yes", "-o", "LogLevel=ERROR", "-i", path.join(dir, "user")],
        ...["-c", suite.cipher, "-m", suite.mac, "-N", "-o", "ExitOnForwardFailure=yes"],
        ...["-p", String(port), "-L", `${local}:127.0.0.1:${sourcePort}`, "root@127.0.0.1"],
      ],
      { stdio: "ignore" },
    );
    children.push(child);
    try {
      // The first connection that gets bytes is the measured one (earlier ones met no listener).
      for (let i = 0; i < 200; i++) {
        const { seconds, bytes } = await socatSink(local);
        if (bytes === BYTES) return seconds;
        if (bytes !== 0) throw new Error(`hop A received ${bytes} of ${BYTES} bytes`);
        await sleep(50);
      }
      throw new Error("ssh -L never listened");
    } finally {
      child.kill();
    }
  };

  const columns = ["sshd", "A", "A+c", "B", "B+c", "C", "C+c"] as const;
  type Column = (typeof columns)[number];
  const results: Record<string, Record<Column, number[]>> = {};
  // CPU seconds of this process (every ssh2 thread in it, nothing else) per GB moved: unlike
  // MB/s, hardly moved by other work on the machine.
  const cpu: Record<string, Record<Column, number[]>> = {};
  const measured = async (row: number[], cpuRow: number[], run: () => Promise<number>) => {
    const before = process.cpuUsage();
    row.push(MB / (await run()));
    const used = process.cpuUsage(before);
    cpuRow.push((used.user + used.system) / 1e6 / (MB / 1000));
  };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? SUITES : [...SUITES].reverse();
    for (const suite of order) {
      const key = label(suite);
      results[key] ??= { sshd: [], A: [], "A+c": [], B: [], "B+c": [], C: [], "C+c": [] };
      const row = results[key];
      cpu[key] ??= { sshd: [], A: [], "A+c": [], B: [], "B+c": [], C: [], "C+c": [] };
      const cpuRow = cpu[key];
      for (const coalesce of round % 2 === 0 ? [false, true] : [true, false]) {
        const c = coalesce ? "+c" : "";
        const server = await ssh2Server(suite, coalesce);
        await measured(row[`A${c}` as Column], cpuRow[`A${c}` as Column], () => forward(server.port, suite));
        const worker = new Worker(new URL("./hop-client-worker.ts", import.meta.url), {
          workerData: { port: server.port, sourcePort, ...suite, coalesce, privateKey: clientKey },
        });
        await new Promise((resolve, reject) => {
          worker.once("message", resolve);
          worker.once("error", reject);
        });
        await measured(row[`B${c}` as Column], cpuRow[`B${c}` as Column], () => server.pull());
        server.relay.on = true;
        await measured(row[`C${c}` as Column], cpuRow[`C${c}` as Column], () => forward(server.port, suite));
        worker.postMessage("stop");
        await worker.terminate();
        await server.close();
      }
      row.sshd.push(MB / (await forward(sshdPort, suite)));
    }
  }

  const best = (xs: number[]) => Math.max(...xs);
  const cell = (x: number, sshd: number) => `${x.toFixed(0)} (${(x / sshd).toFixed(2)})`;
  console.log(`== ssh2 hops alone, ${MB.toFixed(0)} MB per run, best of ${ROUNDS}: MB/s (ratio to sshd) ==`);
  console.log("A    OpenSSH ssh -L → ssh2 server → TCP              (the hub's user side, no agent)");
  console.log("B    ssh2 client → ssh2 server, one stream channel    (the agent tunnel alone)");
  console.log("C    OpenSSH ssh -L → ssh2 server → ssh2 client → TCP (both hops, none of our code)");
  console.log("+c   ssh2's socket writes coalesced per tick;   sshd: OpenSSH ssh -L → sshd → TCP");
  console.log(`${"suite".padEnd(42)}${columns.map((c) => c.padStart(12)).join("")}`);
  for (const [key, row] of Object.entries(results)) {
    const sshd = best(row.sshd);
    const cells = columns.map((c) =>
      (c === "sshd" ? sshd.toFixed(0) : cell(best(row[c]), sshd)).padStart(12),
    );
    console.log(`${key.padEnd(42)}${cells.join("")}`);
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? 0;
  console.log("CPU seconds of the ssh2 threads per GB moved, median (A: server; B, C: server and client)");
  console.log(
    `${"suite".padEnd(42)}${columns
      .slice(1)
      .map((c) => c.padStart(8))
      .join("")}`,
  );
  for (const [key, row] of Object.entries(cpu)) {
    const cells = columns.slice(1).map((c) => median(row[c]).toFixed(2).padStart(8));
    console.log(`${key.padEnd(42)}${cells.join("")}`);
  }
  console.log(`all runs: ${JSON.stringify({ results, cpu })}`);
} finally {
  for (const child of children) child.kill();
  for (const server of servers) if (server.listening) server.close();
  await rm(dir, { recursive: true, force: true });
}
