// A kubernetes cluster's nodeserver restarted mid-stream, as its DaemonSet's pod would be: a real
// `rlark nodeserver --peers-secret` process reading its peers state from the Secret on a real
// kube-apiserver (hack/kube fleet) serves pod B of cluster k1; pod A of cluster c1 (a file-fed
// nodeserver) streams to B through the hub's relay. Killing and restarting k1's nodeserver breaks
// that stream cleanly (A's program sees an error, not a hang), new connections succeed within
// seconds (the new process lists the Secret and dials the hub again), and the processes that
// stayed hold as many fds (c1's nodeserver) and sockets (both pods' rlark-net) as before. Needs root.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import t, { type Test } from "tap";
import { readNodeserverStats } from "../../operators/agent/nodeserver-stats.ts";
import { SOCKET_NAME } from "../../operators/network/index.ts";
import { type BedPod, DomainBed, sh } from "../helpers/domain-net.ts";
import { fleetCluster, testNamespace } from "../helpers/fleet.ts";
import { startSecretNodeserver } from "../helpers/nodeserver-process.ts";
import { ECHO, ROUND_TRIP, STREAM } from "../helpers/python-echo.ts";
import { waitFor } from "../helpers/wait-for.ts";

/** STREAM (python-echo.ts) saying "round" after each 64 KiB echoed back. */
const COUNTED_STREAM = `import socket,sys
c=socket.create_connection((sys.argv[1],7000),timeout=30)
try:
  while True:
    c.sendall(b"x"*65536)
    n=0
    while n<65536:
      d=c.recv(65536)
      if not d: raise EOFError("closed")
      n+=len(d)
    print("round",flush=True)
except Exception as e:
  print("broken",type(e).__name__,flush=True);sys.exit(3)`;

const fds = (pid: number | undefined) => readdirSync(`/proc/${pid}/fd`).length;
/**
 * The sockets a process holds. For rlark-net, not all its fds: Go keeps a pool of pipe pairs for
 * splice(2), which grows with the streams spliced at once and is emptied by its GC, not at a
 * stream's end.
 */
const sockets = (pid: number) =>
  readdirSync(`/proc/${pid}/fd`).filter((f) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${f}`).startsWith("socket:");
    } catch {
      return false;
    }
  }).length;

/** The pid of the pod's `rlark-net sidecar`. */
function rlarkNetPid(pod: BedPod): number {
  const pid = sh("ip", ["netns", "pids", pod.netns])
    .split("\n")
    .filter(Boolean)
    .map(Number)
    .find((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, "utf8")
          .split("\0")
          .join(" ")
          .endsWith("rlark-net sidecar ");
      } catch {
        return false;
      }
    });
  if (pid === undefined) throw new Error(`no rlark-net in pod ${pod.name}`);
  return pid;
}

t.test("a kube nodeserver restarted mid-stream: clean break, quick recovery, no fd leak", async (t) => {
  const { kubeConfig, kubeconfig } = fleetCluster(0);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const namespace = await testNamespace(t, kubeConfig, "hh-nodeserver");
  const bed = new DomainBed("hh");
  t.teardown(() => bed.close());
  await bed.start();
  const net = `100.${64 + Math.floor(Math.random() * 60)}`;
  await bed.domain("train", `${net}.0.0/24`);
  const vipB = `${net}.0.20`;
  const a = await bed.pod("a", "c1", "train", `${net}.0.10`);
  const b = await bed.pod("b", "k1", "train", vipB);
  mkdirSync(bed.socketDir("k1"), { recursive: true });
  bed.startNodeserver("c1");
  for (const pod of [a, b]) bed.startSidecar(pod);
  const echo = path.join(bed.dir, "echo.py");
  writeFileSync(echo, ECHO);
  b.spawn("python3", [echo]);
  await bed.publish();
  // k1's peers state as its kubernetes agent would write it: the Secret rlark-domain-peers.
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: "rlark-domain-peers" },
      data: { "peers.json": readFileSync(path.join(bed.socketDir("k1"), "peers.json")).toString("base64") },
    },
  });
  const start = () => startSecretNodeserver(t, { socketDir: bed.socketDir("k1"), namespace, kubeconfig });
  let kube: ChildProcess = start();
  await bed.ready();

  const roundTrip = async () =>
    (await a.run("python3", ["-c", ROUND_TRIP, vipB]).catch(() => "")).trim() === "hi";
  await waitFor("A reaches B (k1) through the hub", roundTrip, { attempts: 300, everyMs: 100 });

  const stayed = () => ({
    c1: fds(bed.nodeservers.get("c1")?.pid),
    a: sockets(rlarkNetPid(a)),
    b: sockets(rlarkNetPid(b)),
  });
  const before = stayed();

  // The fault matrix's "nodeserver × SIGSTOP": frozen shorter than the program's own 30 s socket
  // timeout, the stream stalls and goes on where it was once the nodeserver resumes; the agent's
  // GET /stats is refused after its timeout meanwhile and answered again after.
  await t.test("a frozen nodeserver: the stream stalls and goes on when it resumes", async (t: Test) => {
    const stream = a.spawn("python3", ["-c", COUNTED_STREAM, vipB]);
    let rounds = 0;
    let out = "";
    stream.stdout?.on("data", (c: Buffer) => {
      out += c.toString();
      rounds = (out.match(/round/g) ?? []).length;
    });
    await waitFor("the stream flowing", () => rounds >= 3, { attempts: 400, everyMs: 25 });
    kube.kill("SIGSTOP");
    t.teardown(() => kube.kill("SIGCONT"));
    const frozenAt = Date.now();
    const atFreeze = rounds;
    // the agent's GET /stats (its poller waits 5 s): refused in time, not held
    const statsSocket = path.join(bed.socketDir("k1"), SOCKET_NAME);
    await t.rejects(
      readNodeserverStats(statsSocket, 2000),
      /no answer within 2000 ms/,
      "GET /stats times out while frozen",
    );
    await waitFor("frozen for 5 s", () => Date.now() - frozenAt >= 5_000, { attempts: 400, everyMs: 25 });
    const whileFrozen = rounds;
    kube.kill("SIGCONT");
    t.type(await readNodeserverStats(statsSocket, 5000), "object", "GET /stats answers again once resumed");
    await waitFor("the stream going on", () => rounds >= whileFrozen + 3, { attempts: 400, everyMs: 25 });
    t.ok(
      whileFrozen - atFreeze <= 2,
      `at most the rounds in flight went through while frozen (${whileFrozen - atFreeze})`,
    );
    t.notMatch(out, /broken/, "the program saw no error");
    const exited = new Promise((resolve) => stream.once("close", resolve));
    stream.kill("SIGKILL");
    await exited;
    await waitFor("a new connection succeeds", roundTrip, { attempts: 300, everyMs: 100 });
  });

  await t.test("the stream breaks cleanly and new connections succeed", async (t: Test) => {
    const stream = a.spawn("python3", ["-c", STREAM, vipB]);
    let out = "";
    stream.stdout?.on("data", (c: Buffer) => {
      out += c.toString();
    });
    await waitFor("the stream flowing", () => out.includes("streaming"), { attempts: 400, everyMs: 25 });
    const exited = new Promise<number | null>((resolve) => stream.once("close", resolve)); // output read to the end
    const stopped = new Promise((resolve) => kube.once("exit", resolve));
    kube.kill("SIGKILL");
    await stopped;
    t.equal(await exited, 3, "A's program saw its stream break");
    t.match(out, /broken/);
    kube = start();
    await waitFor("a new connection succeeds", roundTrip, { attempts: 300, everyMs: 100 });
    t.pass("new connections succeed after the restart");
  });

  await t.test("the processes that stayed hold as many fds as before", async (t: Test) => {
    let now = stayed();
    await waitFor(
      "fd counts back",
      () => {
        now = stayed();
        return now.c1 === before.c1 && now.a === before.a && now.b === before.b;
      },
      { attempts: 200, everyMs: 50 },
    ).catch(() => undefined);
    t.same(now, before, "c1's nodeserver's fds, and both rlark-nets' sockets");
  });
});
