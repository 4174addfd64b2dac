// A pod's :5700 serves only streams with a ticket from a nodeserver of its Domain (docs/networking.md
// "Who may reach :5700"), checked by the real rlark-net sidecar in real network namespaces. The
// attacker is another namespace on the same pod network that reaches the pods' local IPs: a bare
// PROXY line, a forged ticket, a genuine ticket replayed (to the same pod, another pod, another
// port) and an expired one are all closed before a byte reaches the pod's program, and counted in
// the sidecar's log. The nodeserver runs in a namespace of its own where IP forwarding is on (it is
// per namespace), so it hands same-cluster connections to the pods (rlark-direct, with a ticket):
// pod-to-pod traffic on that path keeps working, and its ticket is good once too. Needs root.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect as connectUnix } from "node:net";
import path from "node:path";
import t from "tap";
import { domainInboundKey, inboundPreamble, podInboundKey } from "../../operators/network/inbound-auth.ts";
import type { DomainStats } from "../../operators/network/index.ts";
import { type BedPod, DomainBed, sh } from "../helpers/domain-net.ts";
import { waitFor } from "../helpers/wait-for.ts";

// Connects from `from`'s namespace, sends `payload` (hex), prints what came back (hex) until the
// other side closed (or reset) the stream.
const ATTACK = `
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), 5)
s.settimeout(8)
s.sendall(bytes.fromhex(sys.argv[3]))
got = b""
try:
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
except (ConnectionResetError, socket.timeout):
    pass
print(got.hex())
`;

// A program that notes every connection it accepts, answers with its name and closes.
const server = (port: number, name: string, log: string) => `
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", ${port}))
s.listen(64)
while True:
    c, _ = s.accept()
    with open(${JSON.stringify(log)}, "a") as f:
        f.write("accepted\\n")
    c.sendall(b"hello from ${name}\\n")
    c.close()
`;

t.test("a pod's :5700 takes only streams with a valid, fresh, unused ticket for it", async (t) => {
  const bed = new DomainBed("hh");
  t.teardown(() => bed.close());
  await bed.start();
  const net = `100.${100 + Math.floor(Math.random() * 60)}`;
  const train = await bed.domain("train", `${net}.0.0/24`);
  const vip = { a: `${net}.0.10`, c: `${net}.0.20`, d: `${net}.0.30` };
  const a = await bed.pod("a", "c1", "train", vip.a);
  const c = await bed.pod("c", "c1", "train", vip.c);
  const d = await bed.pod("d", "c1", "train", vip.d);
  // Not in the Domain: only a namespace on the same pod network, as any pod of the cluster is.
  const evil = await bed.pod("evil", "c1");
  // c1's nodeserver, in a namespace that forwards: it offers pods the direct path. It has no way
  // to the hub, which a same-cluster connection never needs.
  const nodeserverNs = `${bed.prefix}-nsd`;
  sh("ip", ["netns", "add", nodeserverNs]);
  t.teardown(() => sh("ip", ["netns", "del", nodeserverNs]));
  sh("ip", ["netns", "exec", nodeserverNs, "sysctl", "-qw", "net.ipv4.ip_forward=1"]);
  mkdirSync(bed.socketDir("c1"), { recursive: true });
  const socket = path.join(bed.socketDir("c1"), "nodeserver.sock");
  const nodeserver: ChildProcess = spawn(
    "ip",
    [
      "netns",
      "exec",
      nodeserverNs,
      path.resolve(import.meta.dirname, "../../node_modules/.bin/node"),
      path.resolve(import.meta.dirname, "../../operators/cli/main.ts"),
      "nodeserver",
      "--socket-dir",
      bed.socketDir("c1"),
    ],
    { env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: "ignore" },
  );
  t.teardown(async () => {
    if (nodeserver.exitCode !== null || nodeserver.signalCode !== null) return;
    const exited = new Promise((resolve) => nodeserver.once("exit", resolve));
    nodeserver.kill("SIGTERM");
    await exited;
  });
  const sidecarLog = (pod: BedPod) => path.join(bed.dir, `sidecar-${pod.name}.log`);
  for (const pod of [a, c, d]) bed.startSidecar(pod, sidecarLog(pod));
  const accepted = (pod: BedPod) => {
    try {
      return readFileSync(path.join(bed.dir, `accepted-${pod.name}`), "utf8").split("\n").length - 1;
    } catch {
      return 0;
    }
  };
  for (const [pod, port] of [
    [c, 8001],
    [d, 8001],
  ] as const) {
    const script = path.join(bed.dir, `server-${pod.name}.py`);
    writeFileSync(script, server(port, pod.name, path.join(bed.dir, `accepted-${pod.name}`)));
    pod.spawn("python3", [script]);
  }
  await bed.publish();
  for (const pod of [a, c, d])
    await waitFor(`the sidecar of ${pod.name} listening`, () => {
      try {
        return pod.exec("ss", ["-Htln", "sport = :5700"]).includes("5700");
      } catch {
        return false;
      }
    });

  const connect = async (from: BedPod, ip: string, port: number) =>
    (
      await from.run("python3", [
        "-c",
        "import socket,sys; s=socket.create_connection((sys.argv[1], int(sys.argv[2])), 5); s.settimeout(8); print(s.recv(100).decode().strip())",
        ip,
        String(port),
      ])
    ).trim();
  const attack = async (target: BedPod, payload: string) =>
    Buffer.from(
      (
        await evil.run("python3", [
          "-c",
          ATTACK,
          target.localIP,
          "5700",
          Buffer.from(payload).toString("hex"),
        ])
      ).trim(),
      "hex",
    ).toString();

  await waitFor(
    "A reaches C by its virtual IP (directly, with the nodeserver's ticket)",
    async () => (await connect(a, vip.c, 8001).catch(() => "")) === "hello from c",
    { attempts: 100, everyMs: 100 },
  );
  const legit = accepted(c);
  t.equal(legit, 1, "C's program saw the pod-to-pod connection");
  const stats = JSON.parse(
    sh("curl", ["-sSf", "--unix-socket", socket, "http://nodeserver/stats"]),
  ) as Record<string, DomainStats>;
  const pair = stats.train?.peers.find((p) => p.source === vip.a && p.target === vip.c);
  // At least once: an attempt before C's program listened was handed over too.
  t.ok((pair?.directConnections ?? 0) >= 1, "handed to the pods: no nodeserver carried it", { pair });
  t.equal(pair?.bytesSent, 0, "the nodeserver moved none of its bytes");

  const cKey = podInboundKey(domainInboundKey("train", train.creds("c1").keyPem), {
    namespace: "default",
    name: "c",
    ip: vip.c,
  });
  const line = (dst: string, port: number) => `PROXY TCP4 ${vip.a} ${dst} 0 ${port}\r\n`;
  const genuine = inboundPreamble(cKey, { src: vip.a, dst: vip.c, srcPort: 0, dstPort: 8001 });

  await t.test("refused: a bare PROXY line claiming to be A", async (t) => {
    t.equal(await attack(c, `${line(vip.c, 8001)}GET / HTTP/1.0\r\n\r\n`), "", "closed, nothing answered");
  });
  await t.test("refused: a forged ticket", async (t) => {
    const forged = `${line(vip.c, 8001)}RLARK-AUTH v1 00000000 ${Date.now()} ${"0".repeat(32)} ${"f".repeat(32)}\r\n`;
    t.equal(await attack(c, forged), "", "closed, nothing answered");
  });
  await t.test("a genuine ticket is good once", async (t) => {
    t.equal(await attack(c, genuine), "hello from c\n", "the first use reaches C's program");
    t.equal(await attack(c, genuine), "", "the same ticket again is refused");
  });
  await t.test("refused: a ticket for C sent to D, or re-aimed at D's virtual IP", async (t) => {
    t.equal(await attack(d, genuine), "", "as it is (its line names C)");
    const [, ticket] = inboundPreamble(cKey, { src: vip.a, dst: vip.c, srcPort: 0, dstPort: 8001 }).split(
      "\r\n",
    );
    t.equal(await attack(d, `${line(vip.d, 8001)}${ticket}\r\n`), "", "with the line rewritten for D");
  });
  await t.test("refused: a ticket for port 8001 with the line rewritten to another port", async (t) => {
    const [, ticket] = inboundPreamble(cKey, { src: vip.a, dst: vip.c, srcPort: 0, dstPort: 8001 }).split(
      "\r\n",
    );
    t.equal(await attack(c, `${line(vip.c, 8002)}${ticket}\r\n`), "");
  });
  await t.test("the ticket of a direct answer is good once", async (t) => {
    // What pod A's rlark-net asks; the answer's ticket is for the line with source port 0.
    const answer = await new Promise<string>((resolve, reject) => {
      let text = "";
      const s = connectUnix(socket, () =>
        s.write(
          `CONNECT ${vip.c}:8001 HTTP/1.1\r\nhost: ${vip.c}:8001\r\nrlark-pod: default/a\r\nrlark-direct: 1\r\n\r\n`,
        ),
      );
      s.on("data", (chunk: Buffer) => {
        text += chunk.toString();
      });
      s.on("end", () => resolve(text));
      s.on("error", reject);
    });
    t.match(answer, `rlark-direct: ${c.localIP}:5700`);
    const ticket = /rlark-ticket: (.*)\r\n/.exec(answer)?.[1];
    t.ok(ticket, "with a ticket");
    const preamble = `${line(vip.c, 8001)}RLARK-AUTH v1 ${ticket}\r\n`;
    t.equal(await attack(c, preamble), "hello from c\n", "it opens one stream");
    t.equal(await attack(c, preamble), "", "not two");
  });
  await t.test("refused: a ticket minted a minute ago", async (t) => {
    const old = inboundPreamble(
      cKey,
      { src: vip.a, dst: vip.c, srcPort: 0, dstPort: 8001 },
      Date.now() - 60_000,
    );
    t.equal(await attack(c, old), "");
  });

  t.equal(
    accepted(c),
    legit + 2,
    "C's program accepted only the pod-to-pod stream and the two genuine tickets",
  );
  t.equal(accepted(d), 0, "D's program accepted nothing");
  await waitFor("the refusals in C's sidecar log", () =>
    readFileSync(sidecarLog(c), "utf8").includes("refused so far"),
  );
  const log = readFileSync(sidecarLog(c), "utf8");
  for (const reason of [
    "no ticket after the PROXY line",
    "ticket of unknown key",
    "ticket replayed",
    "ticket does not match the PROXY line",
    "ticket expired",
  ])
    t.match(log, reason, `C's sidecar logged: ${reason}`);
  t.match(log, /inbound from 10\.\d+\.\d+\.\d+:\d+ refused \(6 refused so far/, "and counted them");
  t.match(readFileSync(sidecarLog(d), "utf8"), "another destination", "D's sidecar logged its refusals");
  t.notMatch(log, cKey.key.toString("hex"), "the key is in no log");

  t.equal(await connect(a, vip.c, 8001), "hello from c", "A still reaches C afterwards");
});
