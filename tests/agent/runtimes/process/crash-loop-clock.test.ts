// The crash-loop backoff runs on the runtime's Clock: a crashing pod is restarted when the clock
// has moved by the backoff, not before, whatever the wall clock does meanwhile.
import t from "tap";
import { FakeClock } from "../../../../operators/lib/clock.ts";
import { rawTask } from "./helpers.ts";
import { openRuntime, pod, waitForPod } from "./runtime-helpers.ts";

t.test("a crashing Deployment waits out each backoff on the runtime's clock", async (t) => {
  const clock = new FakeClock(Date.now());
  const { runtime } = await openRuntime(t, {
    clock,
    backoff: { initialMs: 10_000, maxMs: 300_000, resetAfterMs: 600_000 },
  });
  await runtime.apply([rawTask("crash", { kind: "Deployment", command: ["sh", "-c", "exit 1"] })]);
  await waitForPod(
    runtime,
    "crash-0",
    "backing off after the first crash",
    (p) => p.reason === "CrashLoopBackOff" && clock.pendingDelays().includes(10_000),
  );
  t.equal(pod(runtime, "crash-0")?.restarts, 0, "not restarted while the clock stands still");

  clock.advance(10_000);
  await waitForPod(
    runtime,
    "crash-0",
    "the second crash, backing off twice as long",
    (p) => p.restarts === 1 && p.reason === "CrashLoopBackOff" && clock.pendingDelays().includes(20_000),
  );
  clock.advance(19_999);
  t.same(clock.pendingDelays(), [1], "a millisecond short of the backoff: the restart still waits");
  clock.advance(1);
  await waitForPod(runtime, "crash-0", "the third run", (p) => p.restarts === 2);
});
