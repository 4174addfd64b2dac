import t from "tap";
import {
  kubeletBackoff,
  nextStreak,
  restartDelay,
} from "../../../../operators/agent/runtimes/process/crash-loop-backoff.ts";

t.test("restarts back off like the kubelet: 10 s doubling, capped at 5 min", async (t) => {
  const delays = [1, 2, 3, 4, 5, 6, 7, 100].map((n) => restartDelay(kubeletBackoff, n));
  t.same(delays, [10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000, 300_000]);
});

t.test("a run that lasted 10 minutes clears the crash streak", async (t) => {
  t.equal(nextStreak(kubeletBackoff, 5, 600_000), 1);
  t.equal(nextStreak(kubeletBackoff, 5, 599_999), 6);
});

t.test("a huge streak never overflows the delay", async (t) => {
  t.equal(restartDelay({ initialMs: 1, maxMs: 50, resetAfterMs: 1 }, 10_000), 50);
});
