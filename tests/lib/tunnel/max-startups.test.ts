// The random early drop of connections not yet logged in (OpenSSH's MaxStartups), as a pure
// decision: free below start, at random from start with a probability rising from rate to 100 %,
// always at full; and the start:rate:full syntax with errors that say what is wrong.
import t from "tap";
import { dropsStartup, parseMaxStartups } from "../../../operators/lib/tunnel/max-startups.ts";

const limits = { start: 10, rate: 30, full: 100 };

t.test("below start nothing is dropped, at full everything is", async (t) => {
  t.notOk(
    dropsStartup(9, limits, () => 0),
    "9 waiting: admitted even on the unluckiest draw",
  );
  t.ok(
    dropsStartup(100, limits, () => 0.999_999),
    "100 waiting: dropped even on the luckiest draw",
  );
  t.ok(dropsStartup(150, limits, () => 0.999_999));
});

t.test("from start the chance rises linearly from rate to 100 %", async (t) => {
  // At start the chance is 30 %: a draw under 0.3 drops, one above it is admitted.
  t.ok(dropsStartup(10, limits, () => 0.29));
  t.notOk(dropsStartup(10, limits, () => 0.31));
  // Half-way (55 waiting): 30 + 70 / 2 = 65 %.
  t.ok(dropsStartup(55, limits, () => 0.64));
  t.notOk(dropsStartup(55, limits, () => 0.66));
  // Counted over a whole range of draws, the share dropped is the chance.
  const draws = Array.from({ length: 1000 }, (_, i) => (i + 0.5) / 1000);
  t.equal(draws.filter((d) => dropsStartup(55, limits, () => d)).length, 650);
});

t.test("start:rate:full parses as OpenSSH's; one number N is N:100:N", async (t) => {
  t.same(parseMaxStartups("40:30:120"), { start: 40, rate: 30, full: 120 });
  t.same(parseMaxStartups("20"), { start: 20, rate: 100, full: 20 });
  t.throws(() => parseMaxStartups("10:30"), /expected start:rate:full/);
  t.throws(() => parseMaxStartups("a:b:c"), /expected start:rate:full/);
  t.throws(() => parseMaxStartups("0:30:10"), /start must be at least 1/);
  t.throws(() => parseMaxStartups("10:130:100"), /rate is a percent/);
  t.throws(() => parseMaxStartups("50:30:10"), /full must be at least start/);
});
