// Capability states as Node conditions: what the device plugin publishes is what the agent reads
// back; a condition not published for STALE_MS, or one that does not parse, is UNKNOWN, never failed.
import t from "tap";
import { capabilityCondition, capabilityFromCondition } from "../../operators/lib/capability-condition.ts";
import { STALE_MS } from "../../operators/lib/capability-status.ts";

const now = Date.parse("2026-12-01T12:00:00Z");

t.test("round trip: READY is True, other healths False, UNKNOWN or none Unknown", async (t) => {
  const ready = capabilityCondition({ name: "device-plugin", process: "RUNNING", health: "READY" }, now);
  t.match(ready, { type: "capability.rlinf.io/device-plugin", status: "True", reason: "RUNNING_READY" });
  t.same(capabilityFromCondition(ready, now), { name: "device-plugin", process: "RUNNING", health: "READY" });
  const backoff = {
    name: "ros-controller",
    process: "BACKOFF",
    health: "DEGRADED",
    message: "exit 1",
  } as const;
  const degraded = capabilityCondition(backoff, now);
  t.equal(degraded.status, "False");
  t.same(capabilityFromCondition(degraded, now), backoff);
  const bare = capabilityCondition({ name: "x" }, now);
  t.match(bare, { status: "Unknown", reason: "NONE_NONE" });
  t.same(capabilityFromCondition(bare, now), { name: "x" });
});

t.test("the transition time holds while the status does", async (t) => {
  const first = capabilityCondition({ name: "c", health: "READY" }, now);
  const later = capabilityCondition({ name: "c", health: "READY" }, now + 10_000, first);
  t.equal(later.lastTransitionTime, first.lastTransitionTime);
  t.not(later.lastHeartbeatTime, first.lastHeartbeatTime);
  const changed = capabilityCondition({ name: "c", health: "DEGRADED" }, now + 20_000, later);
  t.equal(changed.lastTransitionTime, new Date(now + 20_000).toISOString());
});

t.test("stale, malformed and foreign conditions", async (t) => {
  const ready = capabilityCondition({ name: "c", process: "RUNNING", health: "READY" }, now);
  t.match(capabilityFromCondition(ready, now + STALE_MS + 1000), {
    name: "c",
    health: "UNKNOWN",
    message: /no report for 31s \(last: RUNNING\/READY\)/,
  });
  t.match(capabilityFromCondition({ ...ready, reason: "Fine" }, now), { health: "UNKNOWN", message: /Fine/ });
  t.match(capabilityFromCondition({ ...ready, reason: "RUNNING_GREAT" }, now), { health: "UNKNOWN" });
  t.match(capabilityFromCondition({ type: ready.type, reason: ready.reason }, now), {
    health: "UNKNOWN",
    message: "no lastHeartbeatTime",
  });
  t.equal(capabilityFromCondition({ type: "Ready", reason: "KubeletReady" }, now), undefined);
});
