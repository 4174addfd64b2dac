// The data path survives the loss of what it talks to: a nodeserver restart and a hub restart
// each break the streams that crossed them cleanly (the pod's program sees an error, not a
// hang), new connections succeed within seconds, and nothing leaks (fd counts).
import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import t, { type Test } from "tap";
import { type BedPod, DomainBed } from "../helpers/domain-net.ts";
import { waitFor } from "../helpers/wait-for.ts";

const ECHO = `import socket,threading
s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(("0.0.0.0",7000));s.listen(64)
def serve(c):
  with c:
    while True:
      d=c.recv(65536)
      if not d: return
      c.sendall(d)
while True:
  c,_=s.accept();threading.Thread(target=serve,args=(c,),daemon=True).start()`;
// Streams until the connection breaks, then says how it ended.
const STREAM = `import socket,sys
c=socket.create_connection((sys.argv[1],7000),timeout=30)
print("streaming",flush=True)
try:
  while True:
    c.sendall(b"x"*65536)
    n=0
    while n<65536:
      d=c.recv(65536)
      if not d: raise EOFError("closed")
      n+=len(d)
except Exception as e:
  print("broken",type(e).__name__,flush=True);sys.exit(3)`;
const ROUND_TRIP = `import socket,sys
c=socket.create_connection((sys.argv[1],7000),timeout=5);c.sendall(b"hi");print(c.recv(2).decode())`;

const fds = (pid: number | undefined) => readdirSync(`/proc/${pid}/fd`).length;

async function roundTrip(a: BedPod, ip: string): Promise<boolean> {
  return (await a.run("python3", ["-c", ROUND_TRIP, ip]).catch(() => "")).trim() === "hi";
}

async function brokenBy(t: Test, a: BedPod, ip: string, disrupt: () => Promise<void>): Promise<void> {
  const stream = a.spawn("python3", ["-c", STREAM, ip]);
  let out = "";
  stream.stdout?.on("data", (c: Buffer) => {
    out += c.toString();
  });
  await waitFor("the stream flowing", () => out.includes("streaming"), { attempts: 400, everyMs: 25 });
  const exited = new Promise<number | null>((resolve) => stream.once("exit", resolve));
  await disrupt();
  t.equal(await exited, 3, "the pod's program saw its stream break");
  t.match(out, /broken/);
}

t.test("nodeserver and hub restarts mid-stream", async (t) => {
  const bed = new DomainBed();
  t.teardown(() => bed.close());
  await bed.start();
  const net = `100.${64 + (bed.subnet % 60)}`;
  await bed.domain("train", `${net}.0.0/24`);
  bed.startNodeserver("c1");
  bed.startNodeserver("c2");
  const a = await bed.pod("a", "c1", "train", `${net}.0.10`);
  const b = await bed.pod("b", "c2", "train", `${net}.0.20`);
  await bed.publish();
  for (const pod of [a, b]) bed.startSidecar(pod);
  await bed.ready();
  const echo = b.spawn("python3", ["-c", ECHO]);
  t.teardown(() => echo.kill());
  const vip = b.vip as string;
  await waitFor("B reachable", () => roundTrip(a, vip), { attempts: 100, everyMs: 100 });
  const c1 = bed.nodeservers.get("c1")?.pid;
  const settled = () =>
    waitFor(
      "no stream left on c1's nodeserver",
      async () => {
        const stats = JSON.parse(
          execFileSync(
            "curl",
            ["-s", "--unix-socket", `${bed.socketDir("c1")}/nodeserver.sock`, "http://nodeserver/stats"],
            {
              encoding: "utf8",
            },
          ),
        ) as Record<string, { peers: { activeStreams: number }[] }>;
        return stats.train?.peers.every((p) => p.activeStreams === 0);
      },
      { attempts: 200, everyMs: 50 },
    );
  await settled();
  const before = fds(c1);

  await t.test("the target cluster's nodeserver restarts", async (t) => {
    await brokenBy(t, a, vip, async () => {
      await bed.stopNodeserver("c2");
      bed.startNodeserver("c2");
    });
    await waitFor("a new connection succeeds", () => roundTrip(a, vip), { attempts: 100, everyMs: 100 });
    t.pass("new connections succeed");
  });

  await t.test("the hub restarts", async (t) => {
    await brokenBy(t, a, vip, () => bed.restartHub());
    await waitFor("a new connection succeeds", () => roundTrip(a, vip), { attempts: 150, everyMs: 100 });
    t.pass("new connections succeed");
  });

  await settled();
  // At most as many: the hub's restart may leave the pool one connection smaller than before.
  await waitFor("c1's nodeserver back to its fd count", () => fds(c1) <= before, {
    attempts: 200,
    everyMs: 50,
  }).catch(() => undefined);
  t.ok(fds(c1) <= before, `c1's nodeserver holds no more fds than before (${fds(c1)} <= ${before})`);
});
