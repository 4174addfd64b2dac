// The chaos soak's commit model (hack/chaos/commits.ts): the same seed draws the same stream, a
// rendered revision is valid (and the invalid one refused) by the hub's own validator, and a
// force-push never reuses a start key of the revision it drops.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import t from "tap";
import {
  applyChange,
  type Desired,
  emptyDesired,
  nextChange,
  renderFiles,
} from "../../hack/chaos/commits.ts";
import { seeded } from "../../hack/chaos/random.ts";
import { rebased } from "../../hack/chaos/soak.ts";
import { validatePaths } from "../../operators/source/index.ts";

const ctx = { marker: "m", startsLog: "/tmp/starts.log", namespace: "chaos" };

function stream(seed: number, n: number): { changes: string[]; desired: Desired } {
  const random = seeded(seed);
  let desired = emptyDesired();
  const changes: string[] = [];
  for (let i = 0; i < n; i++) {
    const change = nextChange(random, desired, true);
    changes.push(change);
    desired = applyChange(random, desired, change);
  }
  return { changes, desired };
}

t.test("the same seed draws the same commits, another seed others", async (t) => {
  t.same(stream(7, 300), stream(7, 300));
  t.notSame(stream(7, 300).changes, stream(8, 300).changes);
  const kinds = new Set(stream(7, 300).changes);
  for (const kind of [
    "create-job",
    "change-job",
    "stop-job",
    "resume-job",
    "delete-job",
    "invalid",
    "force-push",
  ])
    t.ok(kinds.has(kind as never), `the stream has ${kind}`);
});

async function validate(files: Record<string, string>) {
  const dir = await mkdtemp(join(tmpdir(), "rlark-chaos-commits-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  return validatePaths([dir], { baseDir: dir });
}

t.test("a revision the model renders is valid; the invalid one is refused", async (t) => {
  const { desired } = stream(7, 120);
  t.ok(
    Object.keys(desired.jobs).length > 0 && Object.keys(desired.workflows).length > 0,
    "jobs and workflows",
  );
  const valid = await validate(renderFiles(ctx, desired));
  t.same(valid.errors, [], "valid");
  const invalid = await validate(renderFiles(ctx, desired, true));
  t.notOk(invalid.valid, "refused");
  t.match(invalid.errors, [{ file: /broken\.yaml$/ }], "for broken.yaml");
});

t.test("a force-push gives every object the dropped revision changed a fresh gen", async (t) => {
  const base: Desired = {
    jobs: {
      j1: { name: "j1", place: "local", gen: 1, stopped: false },
      j2: { name: "j2", place: "local", gen: 1, stopped: false },
      j3: { name: "j3", place: "kwok-1", gen: 2, stopped: false },
    },
    workflows: { w4: { name: "w4", gen: 1, stopped: false } },
    domains: {},
    counter: 4,
  };
  const dropped: Desired = structuredClone(base);
  dropped.jobs.j1!.stopped = true; // stopped, maybe seen: resumed under a new key
  delete dropped.jobs.j2; // deleted, maybe seen: created again under a new key
  dropped.workflows.w4!.stopped = true;
  dropped.jobs.j5 = { name: "j5", place: "local", gen: 1, stopped: false };
  dropped.counter = 5;
  const out = rebased(base, dropped);
  t.equal(out.jobs.j1!.gen, 2);
  t.equal(out.jobs.j2!.gen, 2);
  t.equal(out.jobs.j3!.gen, 2, "unchanged by the dropped revision: same gen");
  t.equal(out.workflows.w4!.gen, 2);
  t.notOk(out.jobs.j5, "the dropped revision's new Job is gone");
  t.equal(out.counter, 5, "its name is never reused");
});
