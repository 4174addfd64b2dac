// PingMesh's pure parts, on a FakeClock with a probe the test answers: the fixed-size window, the
// topology-aware sample, the probe budget as counted, and topology merged without made-up values.
import t from "tap";
import { FakeClock } from "../../operators/lib/clock.ts";
import {
  mergeTopology,
  type Peer,
  PingMesh,
  ProbeWindow,
  samplePeers,
  topologyFromConfig,
  topologyFromLabels,
} from "../../operators/network/pingmesh/index.ts";

t.test("the window keeps its size and counts loss over it", async (t) => {
  const window = new ProbeWindow(4);
  t.equal(window.figures(), undefined, "nothing before the first probe");
  for (const rtt of [100, 100, 100, 100, 1, undefined, 3, 5]) window.record(rtt);
  // only the last four: 1, lost, 3, 5
  t.same(window.figures(), { samples: 4, loss: 0.25, p50Ms: 3, p99Ms: 5, jitterMs: 2 });
  const lost = new ProbeWindow(2);
  lost.record(undefined);
  t.same(lost.figures(), { samples: 1, loss: 1 }, "all lost: no RTT is made up");
  t.throws(() => new ProbeWindow(0), /window size must be a positive integer/);
});

const peer = (name: string, rack?: string): Peer => ({
  name,
  host: "127.0.0.1",
  port: 1,
  topology: rack ? { rack } : {},
});

t.test("small clusters probe everyone; large ones every rack within the budget", async (t) => {
  const small = [peer("a"), peer("b"), peer("c")];
  t.same(
    samplePeers("a", small, { budget: 16 }).map((p) => p.name),
    ["b", "c"],
    "every other node, never itself",
  );
  const racks = ["r1", "r2", "r3", "r4", "r5"];
  const large = racks.flatMap((rack) => Array.from({ length: 20 }, (_, i) => peer(`${rack}-n${i}`, rack)));
  large.push(...Array.from({ length: 5 }, (_, i) => peer(`loose-${i}`)));
  const chosen = samplePeers("r1-n0", large, { budget: 12, perRack: 2 });
  t.equal(chosen.length, 12, "exactly the budget");
  const byRack = new Map<string, number>();
  for (const p of chosen)
    byRack.set(p.topology.rack ?? "unknown", (byRack.get(p.topology.rack ?? "unknown") ?? 0) + 1);
  t.same(
    [...byRack.keys()].sort(),
    [...racks, "unknown"].sort(),
    "every rack, and the nodes of unknown rack",
  );
  t.ok(
    [...byRack.values()].every((n) => n >= 2),
    "a few per rack",
  );
  const other = samplePeers("r3-n7", large, { budget: 12, perRack: 2 });
  t.not(
    other.map((p) => p.name).join(),
    chosen.map((p) => p.name).join(),
    "another node draws another sample",
  );
  t.throws(() => samplePeers("a", small, { budget: 0 }), /probe budget must be a positive integer/);
});

t.test("the probe budget: budget probes per interval, spread over it", async (t) => {
  const clock = new FakeClock();
  const probed: string[] = [];
  const mesh = new PingMesh({
    self: { name: "self", topology: {} },
    clock,
    probe: async (host) => {
      probed.push(host);
      return host === "slow" ? 30 : undefined;
    },
    intervalMs: 1000,
    budget: 4,
    windowSize: 8,
  });
  mesh.setPeers(
    Array.from({ length: 10 }, (_, i) => ({ ...peer(`n${i}`), host: i === 0 ? "slow" : `h${i}` })),
  );
  mesh.start();
  t.same(clock.pendingDelays(), [250], "the next probe a quarter interval away: no burst");
  for (let i = 0; i < 40; i++) {
    clock.advance(250);
    await new Promise((resolve) => setImmediate(resolve));
  }
  t.equal(mesh.stats().probesSent, 40, "10 intervals × budget 4");
  t.equal(mesh.stats().sampled, 4);
  t.equal(new Set(probed).size, 4, "the same four peers");
  const results = mesh.results();
  t.ok(
    results.every((r) => r.figures.samples === 8),
    "each window holds 8, however many probes ran",
  );
  mesh.stop();
  t.equal(clock.pending, 0, "stop leaves no timer");
  t.throws(
    () => new PingMesh({ self: { name: "x", topology: {} }, clock, probe: async () => 1, budget: 0 }),
    /budget must be a positive integer/,
  );
});

t.test("topology: labels, static config, hostname; unknown stays unknown", async (t) => {
  const labels = topologyFromLabels({
    "topology.kubernetes.io/zone": "z1",
    "kubernetes.io/hostname": "host-a",
    "cloud.google.com/gke-nodepool": "gpu",
  });
  t.same(labels, { zone: "z1", pool: "gpu", hostname: "host-a" }, "no rack, ToR or subnet made up");
  const config = topologyFromConfig({ rack: "r7", zone: "z9" }, "topology.json");
  t.same(mergeTopology(config, labels, { hostname: "os-name" }), {
    zone: "z9",
    rack: "r7",
    pool: "gpu",
    hostname: "host-a",
  });
  t.throws(
    () => topologyFromConfig({ racks: "r1" }, "topology.json"),
    /topology\.json: unknown topology field "racks"/,
  );
  t.throws(
    () => topologyFromConfig({ zone: "" }, "topology.json"),
    /topology field zone must be a non-empty string/,
  );
  t.throws(() => topologyFromConfig([], "topology.json"), /must be an object/);
});
