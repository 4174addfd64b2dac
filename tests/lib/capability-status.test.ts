// The capability files components write for their local agent: round trip, staleness, and junk
// in the directory reported as UNKNOWN (never FAILED) instead of breaking the agent's heartbeat.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import {
  readCapabilityStatuses,
  STALE_MS,
  writeCapabilityStatus,
} from "../../operators/lib/capability-status.ts";

function dir(t: { teardown(fn: () => void): void }): string {
  const d = mkdtempSync(path.join(tmpdir(), "rlark-caps-"));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

t.test("written states are read back sorted; a missing directory is no reports", async (t) => {
  const d = dir(t);
  t.same(readCapabilityStatuses(path.join(d, "absent")), []);
  writeCapabilityStatus(
    d,
    { name: "ros-controller", process: "BACKOFF", health: "DEGRADED", message: "roscore exited" },
    1000,
  );
  writeCapabilityStatus(d, { name: "device-plugin", process: "RUNNING", health: "READY" }, 1000);
  t.same(readCapabilityStatuses(d, 2000), [
    { name: "device-plugin", process: "RUNNING", health: "READY" },
    { name: "ros-controller", process: "BACKOFF", health: "DEGRADED", message: "roscore exited" },
  ]);
  t.same(readCapabilityStatuses(d, 1000 + STALE_MS + 1000), [
    { name: "device-plugin", health: "UNKNOWN", message: "no report for 31s (last: RUNNING/READY)" },
    { name: "ros-controller", health: "UNKNOWN", message: "no report for 31s (last: BACKOFF/DEGRADED)" },
  ]);
  t.throws(() => writeCapabilityStatus(d, { name: "../evil" }), /not a DNS label/);
});

t.test(
  "malformed, oversized or mislabelled files are UNKNOWN with the reason; stray names are skipped",
  async (t) => {
    const d = dir(t);
    writeFileSync(path.join(d, "a.json"), "{");
    writeFileSync(path.join(d, "b.json"), JSON.stringify({ name: "b", process: "EXPLODED", updatedAt: 1 }));
    writeFileSync(path.join(d, "c.json"), JSON.stringify({ name: "other", updatedAt: 1 }));
    writeFileSync(path.join(d, "d.json"), "x".repeat(9000));
    writeFileSync(path.join(d, "Not_A_Label.json"), "{}");
    writeFileSync(path.join(d, "notes.txt"), "ignored");
    const read = readCapabilityStatuses(d, 2);
    t.same(
      read.map((c) => [c.name, c.health]),
      [
        ["a", "UNKNOWN"],
        ["b", "UNKNOWN"],
        ["c", "UNKNOWN"],
        ["d", "UNKNOWN"],
      ],
    );
    t.match(read[1]?.message, /process must be one of STOPPED, STARTING, RUNNING, BACKOFF, FAILED/);
    t.match(read[2]?.message, /names "other"/);
    t.match(read[3]?.message, /larger than 8192 bytes/);
  },
);
