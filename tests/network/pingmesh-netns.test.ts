// PingMesh's real measurement path: TCP connects between network namespaces whose links carry
// netem-style delay and loss, measured by the PingMesh a node runs (real sockets, system clock).
// This kernel has no sch_netem (CONFIG_NET_SCH_NETEM is not set), so `tc qdisc ... netem` is
// refused; hack/network/impair does the same in user space between two TUN devices. Node a reaches
// b over one link (delay 20ms loss 10% from a) and c over another (delay 5ms, no loss); every
// address is inside the namespaces made here, removed at teardown.
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { promisify } from "node:util";
import t from "tap";
import type { PeerResult, PingMeshStats } from "../../operators/network/pingmesh/index.ts";
import { onProcesses, waitFor } from "../helpers/wait-for.ts";

const execFileAsync = promisify(execFile);
const runner = path.resolve(import.meta.dirname, "../fixtures/pingmesh/run-mesh.ts");
const WINDOW = 150;

function sh(...args: string[]): string {
  return execFileSync(args[0] as string, args.slice(1), {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
}

const usable = process.getuid?.() === 0;
// netem's figures without sch_netem, which this machine's kernel lacks (hack/network/impair)
const impair = usable ? sh(path.resolve(import.meta.dirname, "../../hack/network/build-impair")).trim() : "";

t.test(
  "PingMesh shows the delay and loss netem puts on each link",
  { skip: !usable && "needs root" },
  async (t) => {
    const id = randomBytes(2).toString("hex");
    const ns = { a: `pm${id}a`, b: `pm${id}b`, c: `pm${id}c` };
    const children: ChildProcess[] = [];
    t.teardown(() => {
      for (const child of children) child.kill();
      for (const name of Object.values(ns)) {
        try {
          sh("ip", "netns", "del", name);
        } catch {}
      }
    });
    for (const name of Object.values(ns)) sh("ip", "netns", "add", name);
    const inNs = (name: string, ...args: string[]) => sh("ip", "netns", "exec", name, ...args);
    // a—b on 10.77.1.0/30, a—c on 10.77.2.0/30: a point-to-point link each, made by impair (two
    // TUN devices it copies packets between, the far one moved into the peer's namespace)
    const link = async (peer: "b" | "c", delay: string, loss: number) => {
      const here = `pm${id}a${peer}`;
      const there = `pm${id}${peer}a`;
      const subnet = peer === "b" ? 1 : 2;
      const child = spawn(
        "ip",
        ["netns", "exec", ns.a, impair, "-a", here, "-b", there, "-delay", delay, "-loss", String(loss)],
        {
          stdio: ["ignore", "pipe", "inherit"],
        },
      );
      children.push(child);
      let out = "";
      child.stdout?.on("data", (chunk: Buffer) => (out += chunk));
      await waitFor(`impair's devices for ${peer}`, () => out.includes("ready"), onProcesses);
      inNs(ns.a, "ip", "link", "set", there, "netns", ns[peer]);
      inNs(ns.a, "ip", "addr", "add", `10.77.${subnet}.1`, "peer", `10.77.${subnet}.2`, "dev", here);
      inNs(ns[peer], "ip", "addr", "add", `10.77.${subnet}.2`, "peer", `10.77.${subnet}.1`, "dev", there);
      inNs(ns.a, "ip", "link", "set", here, "up");
      inNs(ns[peer], "ip", "link", "set", there, "up");
    };
    for (const name of Object.values(ns)) inNs(name, "ip", "link", "set", "lo", "up");
    await link("b", "20ms", 0.1);
    await link("c", "5ms", 0);

    // b and c accept connections (and close them): what a probe's connect reaches
    for (const [peer, ip] of [
      ["b", "10.77.1.2"],
      ["c", "10.77.2.2"],
    ] as const) {
      const server = `require("node:net").createServer((s) => s.destroy()).listen(7000, "${ip}", () => console.log("up"))`;
      const child = spawn("ip", ["netns", "exec", ns[peer], process.execPath, "-e", server], {
        stdio: ["ignore", "pipe", "ignore"],
      });
      children.push(child);
      let out = "";
      child.stdout?.on("data", (chunk: Buffer) => (out += chunk));
      await waitFor(`the listener in ${peer}`, () => out.includes("up"), onProcesses);
    }

    const config = {
      self: { name: "node-a", topology: { zone: "z1" } },
      peers: [
        { name: "node-b", host: "10.77.1.2", port: 7000, topology: { zone: "z1", rack: "r1" } },
        { name: "node-c", host: "10.77.2.2", port: 7000, topology: { zone: "z2" } },
      ],
      intervalMs: 100,
      windowSize: WINDOW,
      // under the first SYN retransmission (1 s): a lost SYN is a lost probe, not a slow one
      timeoutMs: 800,
    };
    const { stdout } = await execFileAsync(
      "ip",
      ["netns", "exec", ns.a, process.execPath, runner, JSON.stringify(config)],
      { encoding: "utf8", timeout: 300_000 },
    );
    const { results, stats } = JSON.parse(stdout) as { results: PeerResult[]; stats: PingMeshStats };
    const b = results.find((r) => r.target === "node-b");
    const c = results.find((r) => r.target === "node-c");
    t.ok(b && c, "a result for each peer");
    if (!b || !c) return;
    t.equal(b.figures.samples, WINDOW, "the window holds its size, no more");
    t.equal(stats.sampled, 2, "a small cluster: every peer is probed");
    t.ok(stats.probesSent >= 2 * WINDOW, `probes sent: ${stats.probesSent}`);

    // a's SYN is delayed 20 ms; the SYN-ACK comes straight back
    const bp50 = b.figures.p50Ms ?? 0;
    const cp50 = c.figures.p50Ms ?? 0;
    t.ok(bp50 >= 19.5 && bp50 < 60, `b's p50 ${bp50} ms is about the injected 20 ms`);
    t.ok(cp50 >= 4.5 && cp50 < bp50, `c's p50 ${cp50} ms is about the injected 5 ms, under b's`);
    t.ok((b.figures.p99Ms ?? 0) >= bp50, "p99 is at least p50");
    // 10 % of 150 SYNs is 15: binomial spread allows 4..30 at well over 99.9 %
    t.ok(
      b.figures.loss >= 0.025 && b.figures.loss <= 0.2,
      `b's loss ${b.figures.loss} is about the injected 10 %`,
    );
    t.ok(c.figures.loss <= 0.05, `c's loss ${c.figures.loss} is about none`);
    t.same(b.topology, { zone: "z1", rack: "r1" }, "each result carries its peer's topology");
    t.same(c.topology, { zone: "z2" }, "an unknown rack stays unknown");
  },
);
