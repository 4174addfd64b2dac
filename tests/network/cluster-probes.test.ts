// The cluster prober's budget and windows (network/cluster-probes.ts) under a FakeClock: one probe
// per other cluster per interval, figures per cluster over its window, a lost probe counted as
// loss, and a cluster no longer in any Domain dropped.
import t from "tap";
import { FakeClock } from "../../operators/lib/clock.ts";
import { ClusterProber, type ClusterProbeTarget } from "../../operators/network/cluster-probes.ts";

const settle = () => new Promise((resolve) => setImmediate(resolve));

t.test("one probe per cluster per interval, figures per cluster, gone clusters dropped", async (t) => {
  const clock = new FakeClock(0);
  let clusters = ["far", "near"];
  let round = 0;
  const rtt: Record<string, () => Promise<number>> = {
    near: async () => 2,
    // every fourth probe of far is lost
    far: async () => {
      if (++round % 4 === 0) throw new Error("no answer");
      return 40;
    },
  };
  const prober = new ClusterProber({
    targets: async () =>
      clusters.map(
        (cluster): ClusterProbeTarget => ({ cluster, run: rtt[cluster] as () => Promise<number> }),
      ),
    intervalMs: 1000,
    windowSize: 8,
    clock,
  });
  prober.start();
  for (let i = 0; i < 9; i++) {
    await settle();
    clock.advance(1000);
  }
  await settle();
  t.equal(prober.sent, 20, "10 intervals × 2 clusters = 20 probes, no more");
  const figures = Object.fromEntries(prober.figures().map((f) => [f.target, f.figures]));
  t.same(Object.keys(figures), ["far", "near"], "sorted by cluster");
  t.match(
    figures.near,
    { samples: 8, loss: 0, p50Ms: 2, p99Ms: 2, jitterMs: 0 },
    "the window holds the last 8",
  );
  t.match(figures.far, { samples: 8, loss: 0.25, p50Ms: 40 }, "2 of the last 8 lost");
  clusters = ["near"];
  clock.advance(1000);
  await settle();
  t.same(
    prober.figures().map((f) => f.target),
    ["near"],
    "a cluster in no Domain any more is no longer shown",
  );
  prober.stop();
  clock.advance(5000);
  await settle();
  t.equal(prober.sent, 21, "stopped: no more probes");
});

t.test("an interval whose targets cannot be had counts as lost for every window", async (t) => {
  const clock = new FakeClock(0);
  let reachable = true;
  const prober = new ClusterProber({
    targets: async () => {
      if (!reachable) throw new Error("the hub is unreachable");
      return [{ cluster: "far", run: async () => 5 }];
    },
    intervalMs: 1000,
    windowSize: 4,
    clock,
  });
  prober.start();
  await settle();
  reachable = false;
  clock.advance(1000);
  await settle();
  t.match(prober.figures(), [{ target: "far", figures: { samples: 2, loss: 0.5, p50Ms: 5 } }]);
  prober.stop();
});

t.test("an interval that is not positive is refused", async (t) => {
  t.throws(
    () =>
      new ClusterProber({ targets: async () => [], intervalMs: 0, windowSize: 8, clock: new FakeClock(0) }),
    /cluster probe interval must be positive/,
  );
});
