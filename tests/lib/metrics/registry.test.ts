import t from "tap";
import { Registry } from "../../../operators/lib/metrics/index.ts";
import { parseExposition } from "./parse-exposition.ts";

t.test("counters, gauges and histograms render as valid exposition text", async (t) => {
  const r = new Registry();
  const c = r.counter({ name: "x_total", help: "Things.\nTwo lines \\ here.", labelNames: ["a"] });
  c.labels({ a: 'q"uote\\back\nline' }).inc();
  c.labels({ a: "plain" }).inc(2);
  const g = r.gauge({ name: "depth", help: "Depth." });
  g.set(7);
  const h = r.histogram({ name: "lat_seconds", help: "Latency.", labelNames: ["c"], buckets: [0.1, 1] });
  h.labels({ c: "job" }).observe(0.05);
  h.labels({ c: "job" }).observe(0.5);
  h.labels({ c: "job" }).observe(5);
  const text = await r.text();
  const parsed = parseExposition(text);
  t.same(parsed.types, { x_total: "counter", depth: "gauge", lat_seconds: "histogram" });
  t.equal(parsed.value("x_total", { a: 'q"uote\\back\nline' }), 1, "escaped label values round-trip");
  t.equal(parsed.value("x_total", { a: "plain" }), 2);
  t.equal(parsed.value("depth", {}), 7);
  t.equal(parsed.value("lat_seconds_bucket", { c: "job", le: "0.1" }), 1);
  t.equal(parsed.value("lat_seconds_bucket", { c: "job", le: "1" }), 2);
  t.equal(parsed.value("lat_seconds_bucket", { c: "job", le: "+Inf" }), 3);
  t.equal(parsed.value("lat_seconds_count", { c: "job" }), 3);
  t.equal(parsed.value("lat_seconds_sum", { c: "job" }), 5.55);
  t.match(text, /^# HELP x_total Things\.\\nTwo lines \\\\ here\.$/m);
});

t.test("wrong label sets, bad names and decreasing counters are refused", async (t) => {
  const r = new Registry();
  const c = r.counter({ name: "x_total", help: "h", labelNames: ["a"] });
  t.throws(() => c.labels({}), /takes labels \[a\]/);
  t.throws(() => c.labels({ a: "1", b: "2" }), /takes labels/);
  t.throws(() => c.labels({ a: "1" }).inc(-1), /only go up/);
  t.throws(() => r.counter({ name: "bad-name", help: "h" }), /not valid/);
  t.throws(() => r.gauge({ name: "g", help: "h", labelNames: ["__x"] }), /not valid/);
  t.throws(() => r.gauge({ name: "x_total", help: "h" }), /already registered/);
  t.equal(
    r.counter({ name: "x_total", help: "h", labelNames: ["a"] }),
    c,
    "same registration returns the same metric",
  );
});

t.test("collect hooks run before rendering; a failing hook does not break the scrape", async (t) => {
  const r = new Registry();
  const g = r.gauge({ name: "objects", help: "h", labelNames: ["kind"] });
  let n = 0;
  r.onCollect(async () => {
    n++;
    g.labels({ kind: "Job" }).set(n * 10);
  });
  r.onCollect(() => {
    throw new Error("broken hook");
  });
  t.equal(parseExposition(await r.text()).value("objects", { kind: "Job" }), 10);
  t.equal(parseExposition(await r.text()).value("objects", { kind: "Job" }), 20);
});
