import t from "tap";
import { FakeClock } from "../../../operators/lib/clock.ts";
import { ExponentialFailureRateLimiter, WorkQueue } from "../../../operators/lib/controller/index.ts";

t.test("a key queued twice before a worker takes it is handed out once", async (t) => {
  const q = new WorkQueue({ clock: new FakeClock() });
  q.add("a");
  q.add("b");
  q.add("a");
  t.equal(q.length, 2);
  t.equal(await q.get(), "a");
  t.equal(await q.get(), "b");
  t.equal(q.length, 0);
});

t.test("a key re-added while processing waits until done, then is handed out once more", async (t) => {
  const q = new WorkQueue({ clock: new FakeClock() });
  q.add("a");
  const key = await q.get();
  q.add("a");
  q.add("a");
  t.equal(q.length, 0, "not handed to a second worker while processing");
  let second: string | undefined;
  void q.get().then((k) => {
    second = k;
  });
  await Promise.resolve();
  t.equal(second, undefined);
  q.done(key!);
  await Promise.resolve();
  t.equal(second, "a");
  t.equal(q.length, 0);
});

t.test("a waiting worker gets the next key as soon as it is added", async (t) => {
  const q = new WorkQueue({ clock: new FakeClock() });
  const pending = q.get();
  q.add("x");
  t.equal(await pending, "x");
  t.equal(q.processing, 1);
});

t.test("the failure backoff doubles from 5 ms to at most 1000 s and resets on forget", async (t) => {
  const limiter = new ExponentialFailureRateLimiter();
  const delays = Array.from({ length: 30 }, () => limiter.when("k"));
  t.same(delays.slice(0, 6), [5, 10, 20, 40, 80, 160]);
  t.equal(delays[17], 655_360);
  t.equal(delays[18], 1_000_000, "capped at 1000 s");
  t.equal(delays[29], 1_000_000);
  t.equal(limiter.retries("k"), 30);
  t.equal(limiter.when("other"), 5, "per key");
  limiter.forget("k");
  t.equal(limiter.when("k"), 5);
});

t.test("rate-limited adds wait for their delay on the injected clock", async (t) => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock });
  t.equal(q.addRateLimited("a"), 5);
  t.equal(q.length, 0);
  clock.advance(4);
  t.equal(q.length, 0);
  clock.advance(1);
  t.equal(q.length, 1);
  const key = (await q.get())!;
  q.done(key);
  t.equal(q.addRateLimited("a"), 10);
  clock.advance(9);
  t.equal(q.length, 0);
  clock.advance(1);
  t.equal(q.length, 1);
  q.forget("a");
  t.equal(q.retries("a"), 0);
});

t.test("of two delays for one key the earlier wins", async (t) => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock });
  q.addAfter("a", 1000);
  q.addAfter("a", 100);
  q.addAfter("a", 5000);
  t.same(clock.pendingDelays(), [100]);
  clock.advance(100);
  t.equal(q.length, 1);
});

t.test("shutdown with drain hands out what was queued, then ends the workers", async (t) => {
  const clock = new FakeClock();
  const q = new WorkQueue({ clock });
  q.add("a");
  q.add("b");
  q.addAfter("c", 10);
  let drained = false;
  const done = q.shutdown().then(() => {
    drained = true;
  });
  q.add("d");
  t.equal(clock.pending, 0, "delayed keys cancelled");
  const a = (await q.get())!;
  const b = (await q.get())!;
  t.same([a, b], ["a", "b"]);
  t.equal(await q.get(), undefined, "nothing after the queued keys");
  q.done(a);
  await Promise.resolve();
  t.notOk(drained, "still processing b");
  q.done(b);
  await done;
  t.ok(drained);
});

t.test("shutdown without drain drops queued keys and waits only for those in flight", async (t) => {
  const q = new WorkQueue({ clock: new FakeClock() });
  q.add("a");
  q.add("b");
  const a = (await q.get())!;
  const done = q.shutdown({ drain: false });
  t.equal(await q.get(), undefined);
  q.done(a);
  await done;
  t.equal(q.length, 0);
});
