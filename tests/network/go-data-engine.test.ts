// The nodeserver's Go data engine (`rlark nodeserver --data-engine go`, issue 25 item 2): between
// clusters the end-to-end TLS and the copy run in `rlark-net nodeserver-data`, a child of each
// nodeserver, which keeps the decisions, the control streams and /stats (with the per-pair byte
// counts the Go side reports). Killed with -9 it is restarted; the stream it held ends on both
// ends and new connections work again. As root (network namespaces).
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import t from "tap";
import { type BedPod, DomainBed, sh } from "../helpers/domain-net.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

/** An echo server that prints `open` and `closed` per connection. */
const ECHO = `import socket,threading,sys
s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(("0.0.0.0",7000));s.listen(64)
def serve(c):
  print("open",flush=True)
  try:
    while True:
      d=c.recv(65536)
      if not d: break
      c.sendall(d)
  except OSError: pass
  c.close();print("closed",flush=True)
while True:
  c,_=s.accept();threading.Thread(target=serve,args=(c,),daemon=True).start()`;

/** A client that sends one line, prints what comes back, then waits for the end and says so. */
const CLIENT = `import socket,sys
c=socket.create_connection((sys.argv[1],7000));c.sendall(b"hello across\\n")
print(c.recv(100).decode().strip(),flush=True)
try:
  while c.recv(65536): pass
except OSError: pass
print("ended",flush=True)`;

function output(child: ChildProcess): () => string {
  let text = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  return () => text;
}

/** The nodeserver's rlark-net children (its data engine). */
function dataEngines(nodeserver: number): number[] {
  return readFileSync(`/proc/${nodeserver}/task/${nodeserver}/children`, "utf8")
    .split(" ")
    .filter(Boolean)
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "rlark-net";
      } catch {
        return false;
      }
    });
}

function stats(
  bed: DomainBed,
  cluster: string,
): Promise<Record<string, { peers: Record<string, unknown>[] }>> {
  return new Promise((resolve, reject) => {
    http
      .get({ socketPath: path.join(bed.socketDir(cluster), "nodeserver.sock"), path: "/stats" }, (res) => {
        let body = "";
        res.on("data", (c: Buffer) => {
          body += c.toString();
        });
        res.on("end", () => resolve(JSON.parse(body)));
      })
      .on("error", reject);
  });
}

t.test("the Go data engine carries cross-cluster bytes, reports them, and survives kill -9", async (t) => {
  const bed = new DomainBed("rd");
  t.teardown(() => bed.close());
  await bed.start();
  await bed.domain("train", "100.97.0.0/24");
  const c1 = bed.startNodeserver("c1", ["--data-engine", "go"]);
  bed.startNodeserver("c2", ["--data-engine", "go"]);
  const a: BedPod = await bed.pod("a", "c1", "train", "100.97.0.10");
  const b: BedPod = await bed.pod("b", "c2", "train", "100.97.0.20");
  await bed.publish();
  for (const pod of [a, b]) bed.startSidecar(pod);
  await bed.ready();
  const server = b.spawn("python3", ["-c", ECHO]);
  t.teardown(() => server.kill());
  const serverSaid = output(server);
  await waitFor(
    "the echo server",
    () => b.exec("ss", ["-Htln", "sport = :7000"]).includes("7000"),
    onRealServers,
  );

  const [engine] = dataEngines(c1.pid as number);
  t.ok(engine, "c1's nodeserver runs rlark-net nodeserver-data");
  t.equal(readFileSync(`/proc/${engine}/cmdline`, "utf8").split("\0")[1], "nodeserver-data");

  const client = a.spawn("python3", ["-c", CLIENT, b.vip as string]);
  const clientSaid = output(client);
  await waitFor("the echo across clusters", () => clientSaid().includes("hello across"), onRealServers);
  t.pass("a stream crosses the clusters through the Go data engines");

  // The data connection to the hub's relay is the Go process's socket, not the nodeserver's.
  const relayPort = (bed.hub.domainRelayAddress as string).split(":")[1];
  const owners = sh("ss", ["-Htnp", "state", "established", `dport = :${relayPort}`]);
  t.match(
    owners,
    new RegExp(`"rlark-net",pid=${engine}`),
    "rlark-net nodeserver-data holds a relay connection",
  );

  // Its byte counts reach /stats (reported every 500 ms).
  await waitFor(
    "the pair's bytes in c1's /stats",
    async () => {
      const peers = (await stats(bed, "c1")).train?.peers ?? [];
      return peers.some(
        (p) =>
          p.source === a.vip &&
          p.target === b.vip &&
          p.path === "hub" &&
          (p.bytesSent as number) >= 13 &&
          (p.bytesReceived as number) >= 13 &&
          p.activeStreams === 1,
      );
    },
    onRealServers,
  );
  t.pass("the per-pair bytes the Go side counted are in /stats, the stream active");

  process.kill(engine as number, "SIGKILL");
  await waitFor(
    "the source's end of the open stream ended",
    () => clientSaid().includes("ended"),
    onRealServers,
  );
  await waitFor(
    "the target's end of the open stream closed",
    () => serverSaid().includes("closed"),
    onRealServers,
  );
  t.pass("the stream it held ended on both ends");
  await waitFor(
    "a new rlark-net nodeserver-data",
    () => dataEngines(c1.pid as number).some((pid) => pid !== engine),
    onRealServers,
  );
  await waitFor(
    "a new stream across the clusters",
    async () => {
      const again = await a
        .run("python3", [
          "-c",
          `import socket,sys
c=socket.create_connection((sys.argv[1],7000),timeout=5);c.sendall(b"again\\n");print(c.recv(100).decode().strip())`,
          b.vip as string,
        ])
        .catch(() => "");
      return again.includes("again");
    },
    onRealServers,
  );
  t.pass("new connections work after the restart");
  await waitFor(
    "the pair idle in /stats",
    async () => ((await stats(bed, "c1")).train?.peers ?? []).every((p) => p.activeStreams === 0),
    onRealServers,
  );
  t.pass("no stream is counted active after its end");
});

t.test("a target the Go data engine cannot reach is reported to the source as a refusal", async (t) => {
  // B has no sidecar: c2's rlark-net cannot dial its inbound port and c2's nodeserver refuses the
  // hub's stream. The hub then closes the source's stream and its relay drops the source's data
  // connection; whichever c1 learns first, the sidecar must read the refusal, not a reset.
  const bed = new DomainBed("rf");
  t.teardown(() => bed.close());
  await bed.start();
  await bed.domain("train", "100.97.1.0/24");
  bed.startNodeserver("c1", ["--data-engine", "go"]);
  bed.startNodeserver("c2", ["--data-engine", "go"]);
  const a: BedPod = await bed.pod("a", "c1", "train", "100.97.1.10");
  const b: BedPod = await bed.pod("b", "c2", "train", "100.97.1.20");
  await bed.publish();
  const log = path.join(bed.dir, "sidecar-a.log");
  bed.startSidecar(a, log);
  await bed.ready();
  const attempts = 5;
  for (let i = 0; i < attempts; i++)
    await a
      .run("python3", [
        "-c",
        "import socket,sys\nc=socket.create_connection((sys.argv[1],7000),timeout=5)\ntry: c.recv(1)\nexcept OSError: pass",
        b.vip as string,
      ])
      .catch(() => "");
  const refusals = () =>
    readFileSync(log, "utf8")
      .split("\n")
      .filter((line) => line.includes(`${b.vip}:7000 refused`));
  await waitFor(
    `${attempts} refusals in A's sidecar log`,
    () => refusals().length >= attempts,
    onRealServers,
  );
  for (const line of refusals())
    t.match(line, /refused \(502\): the target's nodeserver did not take the connection/, line);
});
