import t from "tap";
import { FakeClock } from "../../../operators/lib/clock.ts";
import { ApplyLoop, type RunResult } from "../../../operators/lib/controller/index.ts";

/** A run the test ends by hand: each call is recorded with the state it got. */
function gatedRun<T>() {
  const calls: { desired: T; finish(result?: RunResult | Error): void }[] = [];
  let active = 0;
  let most = 0;
  const run = (desired: T) =>
    new Promise<RunResult | undefined>((resolve, reject) => {
      active++;
      most = Math.max(most, active);
      calls.push({
        desired,
        finish(result) {
          active--;
          if (result instanceof Error) reject(result);
          else resolve(result);
        },
      });
    });
  return { run, calls, mostAtOnce: () => most };
}

/** Lets promise callbacks (the loop's next step) run. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

t.test("many states set before and during a run make one more run, of the newest", async (t) => {
  const gate = gatedRun<number>();
  const loop = new ApplyLoop({ name: "t", run: gate.run, clock: new FakeClock() });
  const first = [loop.set(1), loop.set(2)];
  await turn();
  t.same(
    gate.calls.map((c) => c.desired),
    [2],
    "states of one tick coalesce into one run of the last",
  );
  const later = [loop.set(3), loop.set(4), loop.set(5)];
  await turn();
  t.equal(gate.calls.length, 1, "no second run while one is in progress");
  gate.calls[0]?.finish();
  await Promise.all(first);
  await turn();
  t.same(
    gate.calls.map((c) => c.desired),
    [2, 5],
  );
  gate.calls[1]?.finish();
  await Promise.all(later);
  await loop.settled();
  t.equal(gate.calls.length, 2, "nothing more to do");
  t.equal(gate.mostAtOnce(), 1, "one run at a time");
});

t.test("a set() resolves only once a run that started after it ends", async (t) => {
  const gate = gatedRun<string>();
  const loop = new ApplyLoop({ name: "t", run: gate.run, clock: new FakeClock() });
  void loop.set("a");
  await turn();
  let served = false;
  void loop.set("b").then(() => {
    served = true;
  });
  gate.calls[0]?.finish();
  await turn();
  t.notOk(served, "the run of a does not serve b");
  gate.calls[1]?.finish();
  await turn();
  t.ok(served);
});

t.test(
  "a failed run rejects its set() and retries the latest state with growing, jittered delays",
  async (t) => {
    const clock = new FakeClock();
    const gate = gatedRun<string>();
    const loop = new ApplyLoop({
      name: "t",
      run: gate.run,
      clock,
      baseMs: 100,
      maxMs: 1000,
      jitter: 0.5,
    });
    const first = loop.set("x");
    await turn();
    gate.calls[0]?.finish(new Error("apiserver down"));
    await t.rejects(first, /apiserver down/);
    const bases = [100, 200, 400, 800, 1000, 1000];
    for (const [i, base] of bases.entries()) {
      await turn();
      const [delay] = clock.pendingDelays();
      t.equal(clock.pending, 1, `one retry armed after failure ${i + 1}`);
      t.ok(
        delay !== undefined && delay >= base && delay < base * 1.5,
        `delay ${delay} in [${base}, ${base * 1.5})`,
      );
      t.equal(loop.failures, i + 1);
      clock.advance(delay ?? 0);
      await turn();
      t.equal(gate.calls.length, i + 2, "the retry ran");
      t.equal(gate.calls.at(-1)?.desired, "x", "of the latest state");
      gate.calls.at(-1)?.finish(i === bases.length - 1 ? undefined : { retry: true });
    }
    await loop.settled();
    t.equal(loop.failures, 0, "a success resets the backoff");
    t.equal(clock.pending, 0, "no retry after a success");
    const again = loop.set("y");
    await turn();
    gate.calls.at(-1)?.finish(new Error("again"));
    await t.rejects(again, /again/);
    await turn();
    const [delay] = clock.pendingDelays();
    t.ok(delay !== undefined && delay >= 100 && delay < 150, `starts again from the base (${delay})`);
    await loop.stop();
  },
);

t.test("jitter spreads delays between the base and base × (1 + jitter)", async (t) => {
  for (const [random, expected] of [
    [0, 100],
    [0.5, 110],
  ] as const) {
    const clock = new FakeClock();
    const loop = new ApplyLoop({
      name: "t",
      run: async () => ({ retry: true }),
      clock,
      baseMs: 100,
      random: () => random,
    });
    void loop.set(1);
    await turn();
    t.equal(clock.pendingDelays()[0], expected);
    await loop.stop();
  }
});

t.test("a new state runs at once, not after the backoff", async (t) => {
  const clock = new FakeClock();
  const gate = gatedRun<number>();
  const loop = new ApplyLoop({ name: "t", run: gate.run, clock, baseMs: 10_000 });
  void loop.set(1).catch(() => undefined);
  await turn();
  gate.calls[0]?.finish(new Error("no"));
  await turn();
  t.equal(clock.pending, 1);
  void loop.set(2);
  await turn();
  t.same(
    gate.calls.map((c) => c.desired),
    [1, 2],
  );
  t.equal(clock.pending, 0, "the retry timer gave way");
  gate.calls[1]?.finish();
  await loop.settled();
});

t.test("requeueAfter runs again after that delay; kick runs again of the latest state", async (t) => {
  const clock = new FakeClock();
  const gate = gatedRun<string>();
  const loop = new ApplyLoop({ name: "t", run: gate.run, clock });
  loop.kick();
  await turn();
  t.equal(gate.calls.length, 0, "nothing to run before a state is set");
  void loop.set("p");
  await turn();
  gate.calls[0]?.finish({ requeueAfter: 60_000 });
  await turn();
  t.same(clock.pendingDelays(), [60_000]);
  loop.kick(200);
  t.same(clock.pendingDelays(), [200], "the sooner run wins");
  loop.kick(5000);
  t.same(clock.pendingDelays(), [200], "a later kick does not postpone it");
  clock.advance(200);
  await turn();
  t.equal(gate.calls.length, 2);
  t.equal(gate.calls[1]?.desired, "p");
  gate.calls[1]?.finish();
  await loop.settled();
  t.equal(clock.pending, 0);
});

t.test("stop() during a run lets it finish, then nothing more runs", async (t) => {
  const clock = new FakeClock();
  const gate = gatedRun<number>();
  const loop = new ApplyLoop({ name: "t", run: gate.run, clock });
  const inRun = loop.set(1);
  await turn();
  const waiting = loop.set(2);
  let stopped = false;
  const stopping = loop.stop().then(() => {
    stopped = true;
  });
  await waiting;
  t.pass("a set() that no run served resolves at stop");
  await turn();
  t.notOk(stopped, "stop waits for the run in progress");
  gate.calls[0]?.finish(new Error("failed while stopping"));
  await t.rejects(inRun, /failed while stopping/);
  await stopping;
  t.equal(clock.pending, 0, "no retry armed after stop");
  await loop.set(3);
  loop.kick();
  await turn();
  t.equal(gate.calls.length, 1, "no run after stop");
  t.ok(loop.stopped);
});

t.test("settled() waits for runs in progress and due, not for a retry's time", async (t) => {
  const clock = new FakeClock();
  const gate = gatedRun<number>();
  const loop = new ApplyLoop({ name: "t", run: gate.run, clock });
  await loop.settled();
  t.pass("settled at once when idle");
  void loop.set(1);
  let settled = false;
  void loop.settled().then(() => {
    settled = true;
  });
  await turn();
  void loop.set(2);
  gate.calls[0]?.finish();
  await turn();
  t.notOk(settled, "the run of 2 is due");
  gate.calls[1]?.finish({ retry: true });
  await turn();
  t.ok(settled, "settled while the retry waits for its time");
  t.equal(clock.pending, 1);
  await loop.stop();
});
