// The per-user byte rate's arithmetic (times given, not waited for) and the pause that several
// reasons share on a real stream.
import { PassThrough } from "node:stream";
import t from "tap";
import { ByteRate, PauseReasons } from "../../operators/access/byte-rate.ts";

t.test("one second's worth passes at once, then each byte waits its share", async (t) => {
  const rate = new ByteRate(1000, 0);
  t.equal(rate.take(1000, 0), 0, "the first second's worth is free");
  t.equal(rate.take(500, 0), 500, "500 bytes over: half a second");
  t.equal(rate.take(0, 500), 0, "paid off after half a second");
  t.equal(rate.take(250, 750), 0, "a quarter second refills 250");
  t.equal(rate.take(10_000, 10_000), 9_000, "a long rest refills one second's worth, no more");
});

t.test("a stream stays paused until every reason to hold it is released", async (t) => {
  const stream = new PassThrough();
  stream.resume();
  const holds = new PauseReasons(stream);
  const full = holds.hold();
  const rate = holds.hold();
  t.ok(stream.isPaused(), "held");
  full();
  full();
  t.ok(stream.isPaused(), "one reason left (a release twice counts once)");
  rate();
  t.notOk(stream.isPaused(), "flows again");
  holds.holdFor(0);
  t.notOk(stream.isPaused(), "no wait: no hold");
  const toggle = holds.toggle();
  toggle.off();
  t.notOk(stream.isPaused(), "a toggle turned off while off does nothing");
  toggle.on();
  toggle.on();
  const other = holds.hold();
  toggle.off();
  t.ok(stream.isPaused(), "on twice is held once: its off leaves only the other reason");
  other();
  t.notOk(stream.isPaused(), "flows again once both are gone");
  holds.holdFor(20);
  t.ok(stream.isPaused(), "held for the wait");
  const start = performance.now();
  for (let i = 0; i < 500 && stream.isPaused(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  t.notOk(stream.isPaused(), "released after it");
  t.ok(performance.now() - start >= 15, "not before it");
});
