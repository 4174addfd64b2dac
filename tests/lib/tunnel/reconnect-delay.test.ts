// The agents' reconnect backoff (reconnect-delay.ts): its bounds at every attempt, and that 1,000
// agents that lost the hub at the same moment spread their returns instead of coming back as one
// herd. The random source is injected and seeded, so every figure here is the same on every run.
import t from "tap";
import { backoffDelay } from "../../../operators/lib/tunnel/index.ts";

/** mulberry32: a small seeded generator, uniform in [0, 1). */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 2 ** 32;
  };
}

t.test("every delay lies in the upper half of its doubling step, capped at the maximum", async (t) => {
  const random = seeded(1);
  for (let attempt = 0; attempt < 40; attempt++) {
    const base = Math.min(30_000, 1000 * 2 ** attempt);
    for (let i = 0; i < 200; i++) {
      const delay = backoffDelay(attempt, {}, random);
      if (delay < base / 2 || delay > base)
        t.fail(`attempt ${attempt}: ${delay} ms outside [${base / 2}, ${base}]`);
    }
  }
  // The extremes of the random source land on the bounds themselves.
  t.equal(
    backoffDelay(0, {}, () => 0),
    500,
  );
  t.equal(
    backoffDelay(0, {}, () => 1),
    1000,
  );
  t.equal(
    backoffDelay(1000, {}, () => 0),
    15_000,
    "a huge attempt count neither overflows nor passes the cap",
  );
  t.equal(
    backoffDelay(7, { initialMs: 100, maxMs: 2000 }, () => 0.5),
    1500,
  );
});

t.test("1,000 agents dropped together spread their first return evenly over half a second", async (t) => {
  const random = seeded(42);
  const delays = Array.from({ length: 1000 }, () => backoffDelay(0, {}, random));
  // Ten buckets of 50 ms over [500, 1000]: uniform would put 100 in each.
  const buckets = new Array<number>(10).fill(0);
  for (const delay of delays) buckets[Math.min(9, Math.floor((delay - 500) / 50))]!++;
  t.ok(
    buckets.every((n) => n >= 70 && n <= 130),
    `each 50 ms bucket holds 70..130 agents: ${buckets.join(" ")}`,
  );
  t.ok(new Set(delays).size > 400, `at least 400 distinct delays among 1,000 (${new Set(delays).size})`);
});

t.test("the spread grows with the attempt, so a hub that stays down meets ever thinner waves", async (t) => {
  const random = seeded(7);
  for (const attempt of [2, 4, 5, 9]) {
    const base = Math.min(30_000, 1000 * 2 ** attempt);
    const delays = Array.from({ length: 1000 }, () => backoffDelay(attempt, {}, random)).sort(
      (a, b) => a - b,
    );
    const width = delays.at(-1)! - delays[0]!;
    t.ok(width > 0.9 * (base / 2), `attempt ${attempt}: spread ${width} ms over a possible ${base / 2} ms`);
    // The busiest 1 % of the window holds no more than 3 % of the agents.
    const window = base / 2 / 100;
    let busiest = 0;
    for (let lo = 0, hi = 0; hi < delays.length; hi++) {
      while (delays[hi]! - delays[lo]! > window) lo++;
      busiest = Math.max(busiest, hi - lo + 1);
    }
    t.ok(busiest <= 30, `attempt ${attempt}: at most 30 agents in any ${window} ms (${busiest})`);
  }
});

t.test("without jitter the same agents would return as one herd (what the spread tests guard)", async (t) => {
  const delays = Array.from({ length: 1000 }, () => backoffDelay(3, {}, () => 0.5));
  t.equal(new Set(delays).size, 1);
});
