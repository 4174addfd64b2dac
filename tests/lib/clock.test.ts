import t from "tap";
import { every, FakeClock, systemClock } from "../../operators/lib/clock.ts";

t.test("the system clock fires timers and cancels them", async (t) => {
  const fired: string[] = [];
  const cancelled = systemClock.setTimeout(() => fired.push("cancelled"), 1);
  systemClock.clearTimeout(cancelled);
  await new Promise<void>((resolve) => {
    systemClock.setTimeout(() => {
      fired.push("kept");
      resolve();
    }, 2);
  });
  // A later timer has fired, so the cancelled one (due earlier) would have fired too.
  t.same(fired, ["kept"]);
  t.ok(Math.abs(systemClock.now() - Date.now()) < 1000);
});

t.test("a fake clock fires due timers in order when advanced, and only then", async (t) => {
  const clock = new FakeClock(1000);
  const fired: string[] = [];
  clock.setTimeout(() => fired.push("b"), 20);
  clock.setTimeout(() => fired.push("a"), 10);
  const c = clock.setTimeout(() => fired.push("c"), 10);
  clock.setTimeout(() => {
    fired.push("d");
    clock.setTimeout(() => fired.push("e (set while firing)"), 5);
  }, 15);
  clock.clearTimeout(c);
  t.same(clock.pendingDelays(), [10, 15, 20]);
  clock.advance(9);
  t.same(fired, []);
  clock.advance(11);
  t.same(fired, ["a", "d", "b", "e (set while firing)"]);
  t.equal(clock.now(), 1020);
  t.equal(clock.pending, 0);
});

t.test("every repeats on its clock, survives a throwing callback and stops when told", async (t) => {
  const clock = new FakeClock(0);
  const at: number[] = [];
  const stop = every(clock, 10, () => {
    at.push(clock.now());
    if (at.length === 2) throw new Error("a bad tick");
  });
  clock.advance(10);
  t.throws(() => clock.advance(10), /a bad tick/);
  clock.advance(10);
  t.same(at, [10, 20, 30]);
  stop();
  clock.advance(100);
  t.same(at, [10, 20, 30]);
  t.equal(clock.pending, 0);
});
