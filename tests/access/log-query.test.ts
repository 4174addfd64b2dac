import t from "tap";
import { MAX_SNAPSHOT_BYTES, parseLogQuery } from "../../operators/access/logs/log-query.ts";

const parse = (query: string, now = Date.parse("2026-01-01T00:10:00Z")) =>
  parseLogQuery(new URLSearchParams(query), now);

t.test("the Kubernetes names, with defaults and bounds", async (t) => {
  t.same(parse(""), {
    tail: 100,
    follow: false,
    limitBytes: MAX_SNAPSHOT_BYTES,
    previous: false,
    timestamps: false,
  });
  t.match(parse("tailLines=7&follow=true&limitBytes=10&previous&timestamps=1&container=main"), {
    tail: 7,
    follow: true,
    limitBytes: 10,
    previous: true,
    timestamps: true,
    container: "main",
  });
  t.equal(parse("tail=3").tail, 3, "the hub's older `tail` still works");
  t.equal(parse("limitBytes=999999999999").limitBytes, MAX_SNAPSHOT_BYTES, "a snapshot is capped");
  t.notOk("limitBytes" in parse("follow=true"), "a follow is bounded by its reader");
  t.equal(parse("sinceTime=2026-01-01T00:00:00Z").sinceSeconds, 600, "sinceTime becomes seconds");
});

t.test("bad values name the field", async (t) => {
  t.throws(() => parse("tailLines=0"), /tailLines must be an integer ≥ 1/);
  t.throws(() => parse("tailLines=1e3"), /tailLines must be an integer/);
  t.throws(() => parse("tailLines=10001"), /at most 10000 lines/);
  t.throws(() => parse("follow=yes"), /follow must be true or false/);
  t.throws(() => parse("sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z"), /not both/);
  t.throws(() => parse("sinceTime=yesterday"), /sinceTime must be an RFC 3339 time/);
  t.throws(() => parse("container=../x"), /container must be a container name/);
});
