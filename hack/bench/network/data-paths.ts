// Candidate data paths between two nodeservers through the hub, on loopback, against OpenSSH
// `ssh -L` in the same run (docs/adr/0007-domain-data-path.md). Each candidate runs three
// processes — nodeserver A, hub, nodeserver B — and carries iperf3 (one stream) and a
// connect + 1-byte echo from a client on A's port to a server behind B. Printed per candidate,
// in alternating rounds: MB/s, × OpenSSH, connect p50/p99, and the CPU seconds per GB each
// process spent during the iperf3 run.
//   h2         the path before ADR 0007's second decision: mutual TLS + HTTP/2 to the hub, a
//              CONNECT stream per connection carrying its bytes (16 MiB stream windows)
//   tls        one mutual-TLS connection to the hub per stream, taken from connections each
//              nodeserver keeps open ahead; the hub reads a header line and pipes TLS <-> TLS
//   e2e        the hub moves ciphertext only: raw TCP to the hub (pre-opened), a header line,
//              then mutual TLS between the two nodeservers through it (session resumption);
//              the real path took this (its tickets come over the HTTP/2 control streams)
//   e2e-full   as e2e with a full TLS handshake (no resumption) per stream
//
//   node_modules/.bin/node hack/bench/network/data-paths.ts [seconds=4] [rounds=2] [connects=200] [candidates=h2,tls,e2e]
import { type ChildProcess, execFile, fork, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http2 from "node:http2";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Duplex } from "node:stream";
import tls, { type TLSSocket } from "node:tls";
import { promisify } from "node:util";
import { generateKeyPair, openCertificateAuthority, publicKeyPem } from "../../../operators/lib/pki/index.ts";
import { splice } from "../../../operators/lib/relay/index.ts";
import {
  CONNECT_PROBE,
  cpuSeconds,
  echoServerPython,
  SSHD_FORWARDING,
  untilListening,
  writeSshdConfig,
} from "../probes.ts";

const run = promisify(execFile);
const IPERF = 25201;
const ECHO = 27000;
const SPARES = 4;
const H2_SETTINGS = {
  settings: { initialWindowSize: 16 * 1024 * 1024, maxFrameSize: 1024 * 1024 },
  maxSessionMemory: 64,
};
const SESSION_WINDOW = 64 * 1024 * 1024;

interface Creds {
  ca: string;
  hubCert: string;
  hubKey: string;
  cert: string;
  key: string;
}

// ---------------------------------------------------------------- roles (child processes)

function hubTlsOptions(c: Creds, alpn: string[]): tls.TlsOptions {
  return {
    key: c.hubKey,
    cert: c.hubCert,
    ca: c.ca,
    requestCert: true,
    rejectUnauthorized: true,
    minVersion: "TLSv1.3",
    ALPNProtocols: alpn,
  };
}

function dialTls(c: Creds, port: number, alpn: string): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({
      host: "127.0.0.1",
      port,
      ca: c.ca,
      cert: c.cert,
      key: c.key,
      ALPNProtocols: [alpn],
      minVersion: "TLSv1.3",
      checkServerIdentity: () => undefined,
    });
    s.once("secureConnect", () => {
      s.setNoDelay(true);
      resolve(s);
    });
    s.once("error", reject);
  });
}

function dialRaw(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: "127.0.0.1", port, noDelay: true });
    s.once("connect", () => resolve(s));
    s.once("error", reject);
  });
}

/** Reads one `\n`-terminated line, then hands the socket (rest unshifted) back paused. */
function readLine(s: Duplex): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf(10);
      if (end < 0) return;
      s.off("data", onData);
      s.off("error", reject);
      s.pause();
      const rest = buf.subarray(end + 1);
      if (rest.length > 0) s.unshift(rest);
      resolve(buf.subarray(0, end).toString());
    };
    s.on("data", onData);
    s.once("error", reject);
    s.resume();
  });
}

/** Keeps `n` connections made by `dial` open ahead of use. */
class Spares<S extends Duplex> {
  #ready: S[] = [];
  #pending = 0;
  readonly dial: () => Promise<S>;
  readonly n: number;
  readonly onReady: ((s: S) => void) | undefined;
  constructor(dial: () => Promise<S>, n: number, onReady?: (s: S) => void) {
    this.dial = dial;
    this.n = n;
    this.onReady = onReady;
    this.fill();
  }
  fill(): void {
    while (this.#ready.length + this.#pending < this.n) {
      this.#pending++;
      this.dial().then(
        (s) => {
          this.#pending--;
          if (this.onReady) this.onReady(s);
          else this.#ready.push(s);
        },
        () => this.#pending--,
      );
    }
  }
  async take(): Promise<S> {
    const s = this.#ready.shift();
    this.fill();
    return s ?? this.dial();
  }
}

function listenPorts(onConn: (client: net.Socket, target: number) => void): Promise<number[]> {
  return Promise.all(
    [IPERF, ECHO].map(
      (target) =>
        new Promise<number>((resolve) => {
          const server = net.createServer({ noDelay: true }, (c) => {
            c.on("error", () => {});
            onConn(c, target);
          });
          server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port));
        }),
    ),
  );
}

function toTarget(port: number): Promise<net.Socket> {
  return dialRaw(port);
}

async function roleHub(kind: string, c: Creds): Promise<number> {
  if (kind === "h2") {
    let reverse: http2.ClientHttp2Session | undefined;
    const h2 = http2.createServer(H2_SETTINGS);
    h2.on("session", (s) => s.once("connect", () => s.setLocalWindowSize(SESSION_WINDOW)));
    h2.on("stream", (stream, headers) => {
      stream.on("error", () => {});
      const out = (reverse as http2.ClientHttp2Session).request(
        { ":method": "CONNECT", ":authority": String(headers[":authority"]) },
        { endStream: false },
      );
      out.on("error", () => {});
      out.once("response", () => {
        stream.respond({ ":status": 200 });
        splice(stream, out);
      });
    });
    const server = tls.createServer(hubTlsOptions(c, ["h2", "accept"]), (socket) => {
      socket.setNoDelay(true);
      socket.on("error", () => {});
      if (socket.alpnProtocol === "accept") {
        void readLine(socket).then(() => {
          const session = http2.connect("https://b", {
            ...H2_SETTINGS,
            createConnection: () => socket,
          });
          session.once("connect", () => session.setLocalWindowSize(SESSION_WINDOW));
          reverse = session;
        });
      } else h2.emit("connection", socket);
    });
    return listen(server);
  }
  // tls, e2e, e2e-full: A sends `target\n` on a spare; the hub pairs it with one of B's spares.
  const spares: Duplex[] = [];
  const pair = async (a: Duplex) => {
    const target = await readLine(a);
    const b = spares.shift();
    if (!b) return void a.destroy();
    b.write(`${target}\n`);
    splice(a, b);
  };
  const onSocket = (s: Duplex, role: string) => {
    s.on("error", () => {});
    if (role === "accept") spares.push(s);
    else void pair(s);
  };
  if (kind === "tls") {
    const server = tls.createServer(hubTlsOptions(c, ["dial", "accept"]), (s) => {
      s.setNoDelay(true);
      onSocket(s, s.alpnProtocol as string);
    });
    return listen(server);
  }
  const server = net.createServer({ noDelay: true }, (s) => {
    void readLine(s).then((role) => onSocket(s, role));
  });
  return listen(server);
}

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port)),
  );
}

async function roleA(kind: string, c: Creds, hub: number): Promise<number[]> {
  if (kind === "h2") {
    const socket = await dialTls(c, hub, "h2");
    const session = http2.connect("https://hub", { ...H2_SETTINGS, createConnection: () => socket });
    session.once("connect", () => session.setLocalWindowSize(SESSION_WINDOW));
    return listenPorts((client, target) => {
      const stream = session.request(
        { ":method": "CONNECT", ":authority": `10.0.0.1:${target}` },
        { endStream: false },
      );
      stream.on("error", () => client.destroy());
      stream.once("response", () => splice(client, stream));
    });
  }
  let session: Buffer | undefined;
  let reused = 0;
  process.on("SIGTERM", () => {
    if (kind !== "h2" && kind !== "tls") console.error(`${kind}: ${reused} resumed handshakes`);
    process.exit(0);
  });
  const spares =
    kind === "tls"
      ? new Spares(() => dialTls(c, hub, "dial"), SPARES)
      : new Spares(async () => {
          const s = await dialRaw(hub);
          s.write("dial\n");
          return s;
        }, SPARES);
  return listenPorts(async (client, target) => {
    client.pause();
    let up: Duplex = await spares.take();
    up.write(`${target}\n`);
    if (kind !== "tls") {
      const raw = up as net.Socket;
      up = await new Promise<TLSSocket>((resolve, reject) => {
        const s = tls.connect({
          socket: raw,
          ca: c.ca,
          cert: c.cert,
          key: c.key,
          minVersion: "TLSv1.3",
          checkServerIdentity: () => undefined,
          ...(kind === "e2e" && session ? { session } : {}),
        });
        s.on("session", (t) => {
          session = t;
        });
        s.once("secureConnect", () => {
          reused += s.isSessionReused() ? 1 : 0;
          resolve(s);
        });
        s.once("error", reject);
      });
    }
    const ok = await readLine(up);
    if (ok !== "ok") return void client.destroy();
    splice(client, up);
  });
}

async function roleB(kind: string, c: Creds, hub: number): Promise<void> {
  if (kind === "h2") {
    const socket = await dialTls(c, hub, "accept");
    // HTTP/2 takes the socket over only once the hello is written (a write in flight trips an
    // assertion in Node's http2).
    await new Promise((resolve) => socket.write("b\n", resolve));
    const server = http2.createServer(H2_SETTINGS);
    server.on("session", (s) => s.once("connect", () => s.setLocalWindowSize(SESSION_WINDOW)));
    server.on("stream", (stream, headers) => {
      stream.on("error", () => {});
      toTarget(Number(String(headers[":authority"]).split(":")[1])).then((s) => {
        stream.respond({ ":status": 200 });
        splice(stream, s);
      });
    });
    server.emit("connection", socket);
    return;
  }
  // One context for every stream: its session-ticket keys let A resume instead of a full handshake.
  const context = tls.createSecureContext({
    key: c.key,
    cert: c.cert,
    ca: c.ca,
    minVersion: "TLSv1.3",
    sessionIdContext: "rlark-domain",
  });
  const serve = async (s: Duplex) => {
    const target = Number(await readLine(s));
    spares.fill();
    let down = s;
    if (kind !== "tls") {
      down = new tls.TLSSocket(s as net.Socket, {
        isServer: true,
        secureContext: context,
        requestCert: true,
        rejectUnauthorized: true,
        minVersion: "TLSv1.3",
      });
      down.on("error", () => {});
      await new Promise((resolve) => down.once("secure", resolve));
    }
    const t = await toTarget(target);
    down.write("ok\n");
    splice(down, t);
  };
  const spares: Spares<Duplex> = new Spares<Duplex>(
    async () => {
      if (kind === "tls") return dialTls(c, hub, "accept");
      const s = await dialRaw(hub);
      s.write("accept\n");
      return s;
    },
    SPARES,
    (s) => void serve(s),
  );
  // Spares are always "ready": each serves when its header arrives.
}

// ---------------------------------------------------------------- driver

interface Row {
  name: string;
  mbps: number;
  p50: number;
  p99: number;
  cpu: Record<string, number>;
}

async function measure(
  name: string,
  iperfPort: number,
  echoPort: number,
  pids: Record<string, number>,
  seconds: number,
  connects: number,
): Promise<Row> {
  const before = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, cpuSeconds(p)]));
  const { stdout } = await run(
    "iperf3",
    ["-c", "127.0.0.1", "-p", String(iperfPort), "-t", String(seconds), "-J"],
    {
      maxBuffer: 16 * 1024 * 1024,
    },
  );
  const json = JSON.parse(stdout);
  const bytes = json.end.sum_received.bytes;
  const mbps = bytes / json.end.sum_received.seconds / 1e6;
  const cpu = Object.fromEntries(
    Object.entries(pids).map(([k, p]) => [k, (cpuSeconds(p) - (before[k] ?? 0)) / (bytes / 1e9)]),
  );
  const out = (await run("python3", ["-c", CONNECT_PROBE, "127.0.0.1", String(echoPort), String(connects)]))
    .stdout;
  const [p50, p99] = out.trim().split(" ").map(Number) as [number, number];
  console.error(`${name}: ${mbps.toFixed(0)} MB/s, connect p50 ${p50.toFixed(2)} p99 ${p99.toFixed(2)} ms`);
  return { name, mbps, p50, p99, cpu };
}

function child(
  role: string,
  kind: string,
  dir: string,
  hub = 0,
): Promise<{ proc: ChildProcess; ports: number[] }> {
  const proc = fork(new URL(import.meta.url).pathname, ["--role", role, kind, dir, String(hub)], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    proc.once("message", (ports) => resolve({ proc, ports: ports as number[] }));
    proc.once("exit", (code) => reject(new Error(`${role} ${kind} exited ${code}`)));
  });
}

async function candidate(kind: string, dir: string, seconds: number, connects: number): Promise<Row> {
  const hub = await child("hub", kind, dir);
  const b = await child("b", kind, dir, hub.ports[0]);
  const a = await child("a", kind, dir, hub.ports[0]);
  try {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const pids = {
      "nodeserver A": a.proc.pid as number,
      hub: hub.proc.pid as number,
      "nodeserver B": b.proc.pid as number,
    };
    return await measure(kind, a.ports[0] as number, a.ports[1] as number, pids, seconds, connects);
  } finally {
    for (const p of [a, b, hub]) p.proc.kill();
  }
}

async function sshForward(dir: string): Promise<ChildProcess[]> {
  chmodSync(dir, 0o700);
  await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, "user")]);
  const config = writeSshdConfig(
    dir,
    "127.0.0.1:22391",
    readFileSync(path.join(dir, "user.pub"), "utf8"),
    SSHD_FORWARDING,
  );
  const sshd = spawn("/usr/sbin/sshd", ["-D", "-e", "-f", config], { stdio: "ignore" });
  await untilListening(22391, "sshd");
  const ssh = spawn(
    "ssh",
    [
      "-N",
      "-i",
      path.join(dir, "user"),
      "-o",
      "StrictHostKeyChecking=no",
      "-o",
      "UserKnownHostsFile=/dev/null",
      "-o",
      "Ciphers=aes128-gcm@openssh.com",
      "-o",
      "LogLevel=ERROR",
      "-p",
      "22391",
      "-L",
      `127.0.0.1:35201:127.0.0.1:${IPERF}`,
      "-L",
      `127.0.0.1:37000:127.0.0.1:${ECHO}`,
      "root@127.0.0.1",
    ],
    { stdio: "ignore" },
  );
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(37000, "127.0.0.1");
      s.once("connect", () => {
        s.destroy();
        resolve(true);
      });
      s.once("error", () => resolve(false));
    });
    if (ok) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return [ssh, sshd];
}

/** A process and all its descendants (sshd forks a session process per login). */
function tree(root: number): number[] {
  const parent = new Map<number, number>();
  for (const entry of readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
    try {
      const fields = (readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1] ?? "").split(" ");
      parent.set(Number(entry), Number(fields[1]));
    } catch {}
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) for (const [pid, ppid] of parent) if (ppid === out[i]) out.push(pid);
  return out;
}

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 4);
  const rounds = Number(process.argv[3] ?? 2);
  const connects = Number(process.argv[4] ?? 200);
  const kinds = (process.argv[5] ?? "h2,tls,e2e").split(",");
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-bench-paths-"));
  const ca = openCertificateAuthority({ dataDir: dir });
  // The e2e candidates need a Domain certificate good for serverAuth too (one nodeserver serves).
  const issue = (role: "hub" | "domain", name: string) => {
    const key = generateKeyPair().privateKeyPem;
    const request = {
      role,
      name,
      publicKey: publicKeyPem(key),
      ttlMs: 86_400_000,
      serverNames: [`${name}.domain`],
    };
    return { key, cert: ca.issue(request).certPem };
  };
  const hub = issue("hub", "domain-relay");
  const dom = issue("domain", "bench");
  const creds: Creds = { ca: ca.certPem, hubCert: hub.cert, hubKey: hub.key, cert: dom.cert, key: dom.key };
  writeFileSync(path.join(dir, "creds.json"), JSON.stringify(creds));
  const servers = [
    spawn("iperf3", ["-s", "-B", "127.0.0.1", "-p", String(IPERF)], { stdio: "ignore" }),
    spawn("python3", ["-c", echoServerPython("127.0.0.1", ECHO)], { stdio: "ignore" }),
  ];
  const sshDir = mkdtempSync(path.join(tmpdir(), "rlark-bench-ssh-"));
  servers.push(...(await sshForward(sshDir)));
  const rows: Row[][] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      const round: Row[] = [];
      const [ssh, sshd] = [servers[2] as ChildProcess, servers[3] as ChildProcess];
      const pids = {
        ssh: ssh.pid as number,
        ...Object.fromEntries(tree(sshd.pid as number).map((p, i) => [`sshd ${i}`, p])),
      };
      round.push(await measure("OpenSSH ssh -L", 35201, 37000, pids, seconds, connects));
      for (const kind of kinds) round.push(await candidate(kind, dir, seconds, connects));
      rows.push(round);
    }
  } finally {
    for (const s of servers) s.kill();
    rmSync(dir, { recursive: true, force: true });
    rmSync(sshDir, { recursive: true, force: true });
  }
  console.log(`\n${seconds} s of one iperf3 stream per path; ${connects} connects (connect + 1-byte echo)`);
  rows.forEach((round, i) => {
    const ssh = round[0] as Row;
    console.log(`\nround ${i + 1}\n`);
    console.log("| path | MB/s | × OpenSSH -L | connect p50 ms | p99 ms | CPU s/GB by process | total |");
    console.log("|---|---|---|---|---|---|---|");
    for (const r of round) {
      const total = Object.values(r.cpu).reduce((n, v) => n + v, 0);
      const parts = Object.entries(r.cpu)
        .filter(([, v]) => v > 0.005)
        .map(([k, v]) => `${k} ${v.toFixed(2)}`)
        .join(", ");
      console.log(
        `| ${r.name} | ${r.mbps.toFixed(0)} | ${(r.mbps / ssh.mbps).toFixed(2)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${parts} | ${total.toFixed(2)} |`,
      );
    }
  });
}

if (process.argv[2] === "--role") {
  const [, , , role, kind, dir, hubPort] = process.argv as string[];
  const c = JSON.parse(readFileSync(path.join(dir as string, "creds.json"), "utf8")) as Creds;
  let ports: number[] = [];
  if (role === "hub") ports = [await roleHub(kind as string, c)];
  else if (role === "a") ports = await roleA(kind as string, c, Number(hubPort));
  else await roleB(kind as string, c, Number(hubPort));
  process.send?.(ports);
} else await main();
