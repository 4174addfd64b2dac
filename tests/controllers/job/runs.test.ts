// Run bookkeeping on its own: pure over the Job and a status draft.

import t from "tap";
import { adoptRun, restartReason, restartWanted, startRun } from "../../../operators/controllers/job/runs.ts";
import { specHash } from "../../../operators/controllers/job/spec-hash.ts";
import { StatusDraft } from "../../../operators/controllers/job/status-draft.ts";
import { job, k8sTask } from "../placement/fixtures.ts";

const T0 = Date.UTC(2026, 10, 29, 12, 0, 0);

t.test("a run started before spec hashes were recorded answers the spec it finds: no restart", async (t) => {
  const old = job("ppo", [k8sTask("trainer")]);
  old.status = { run: 3, phase: "Running", runAnnotation: "" };
  const draft = new StatusDraft(old, T0);
  adoptRun(draft, old, []);
  t.equal(draft.status.specHash, specHash(old), "the hash of the spec as it is now");
  t.notOk(restartWanted(draft.status, old), "the running run goes on");
});

t.test(
  "a run that failed and was then stopped goes to history as Failed, with why the next began",
  async (t) => {
    const failed = job("ppo", [k8sTask("trainer")], { stopped: true });
    failed.metadata.annotations = { "rlinf.io/run": "b" };
    failed.status = {
      run: 1,
      phase: "Stopped",
      runAnnotation: "a",
      specHash: specHash(failed),
      conditions: [{ type: "Failed", status: "True", reason: "TaskFailed", message: "task trainer failed" }],
    };
    t.equal(restartReason(failed.status, failed), 'the rlinf.io/run annotation changed to "b"');
    const draft = new StatusDraft(failed, T0);
    startRun(draft, failed);
    t.same(draft.status.history, [
      { run: 1, phase: "Failed", reason: 'the rlinf.io/run annotation changed to "b"', tasks: [] },
    ]);
    t.equal(draft.status.run, 2);
    t.same(draft.status.tasks, [{ name: "trainer", taskName: "ppo-trainer", phase: "Pending" }]);
    t.equal(
      draft.status.events?.at(-1)?.message,
      'run 2 started: the rlinf.io/run annotation changed to "b"',
    );
  },
);
