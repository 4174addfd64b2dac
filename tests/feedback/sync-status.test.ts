import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path, { join } from "node:path";
import t, { type Test } from "tap";
import { createGitHubProvider } from "../../operators/feedback/providers/index.ts";
import { createSyncStatusReporter, describeRefused } from "../../operators/feedback/sync-status.ts";
import { FakeClock } from "../../operators/lib/clock.ts";
import { openSqliteStore } from "../../operators/lib/store/index.ts";
import { createGitRepository, createGitWatcher, validatePaths } from "../../operators/source/index.ts";
import { applySnapshot } from "../../operators/source/snapshot-apply.ts";
import { createGitServer } from "../helpers/git-server.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { startGitHubStandIn } from "./providers/github-stand-in.ts";

const STATUSES = "/repos/{owner}/{repo}/statuses/{sha}";
const CLUSTER = (name: string) =>
  `apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: ${name}\nspec:\n  runtime: kubernetes\n`;

async function setup(t: Test, hubName?: string) {
  const github = await startGitHubStandIn({ owner: "acme", repo: "fleet" });
  t.teardown(() => github.close());
  const clock = new FakeClock();
  const provider = createGitHubProvider({
    baseUrl: github.url,
    auth: { token: "ghp_x" },
    retryBaseMs: 1,
    retries: 1,
  });
  const reporter = createSyncStatusReporter({
    provider,
    repo: { owner: "acme", repo: "fleet" },
    ...(hubName ? { hubName } : {}),
    dashboardUrl: "https://rlark.example.test/",
    retryBaseMs: 1000,
    clock,
  });
  t.teardown(() => reporter.stop());
  return { github, clock, reporter };
}

t.test("every revision the hub syncs gets rlark/sync pending, then success with the counts", async (t) => {
  const { github, reporter } = await setup(t, "prod");
  const git = await createGitServer();
  const dataDir = await mkdtemp(join(tmpdir(), "rlark-sync-"));
  const store = openSqliteStore({ dataDir: join(dataDir, "store") });
  t.teardown(async () => {
    await store.close();
    await git.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  // The hub's applyRevision, wrapped as the lead wires it: counts come back with the result.
  const watcher = createGitWatcher({
    repository: createGitRepository({ url: git.fileUrl, branch: "main", dataDir }),
    dataDir,
    intervalMs: 3_600_000,
    applyRevision: reporter.wrap(async ({ revision, dir, path: manifests }) => {
      const result = await validatePaths([path.join(dir, manifests)], { baseDir: dir });
      if (!result.valid) return { accepted: false, errors: result.errors };
      const changes = await applySnapshot(store, result.objects, revision);
      return { accepted: true, errors: [], changes };
    }),
  });
  t.teardown(() => watcher.stop());

  const first = await git.commit({ "a.yaml": CLUSTER("a"), "b.yaml": CLUSTER("b") });
  await watcher.trigger();
  await reporter.flush();
  const context = "rlark/sync (prod)";
  t.same(
    github.statuses.filter((s) => s.sha === first).map((s) => s.state),
    ["pending", "success"],
  );
  const applied = github.status(first, context);
  t.equal(applied?.description, "applied: 2 created, 0 changed, 0 deleted");
  t.equal(applied?.targetUrl, "https://rlark.example.test/");

  const second = await git.commit({
    "a.yaml": CLUSTER("a").replace("kubernetes", "process"),
    "b.yaml": null,
  });
  await watcher.trigger();
  await reporter.flush();
  t.equal(github.status(second, context)?.description, "applied: 0 created, 1 changed, 1 deleted");

  const third = await git.commit({
    "c.yaml":
      "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: c\nspec:\n  runtime: warp-drive\n",
  });
  await watcher.trigger();
  await reporter.flush();
  const refused = github.status(third, context);
  t.equal(refused?.state, "failure");
  t.match(refused?.description, /^refused, 1 error: c\.yaml:6 \/spec\/runtime: /);
  t.ok((refused?.description.length ?? 0) <= 140, "fits GitHub's description limit");
  t.same(github.violations, []);
});

t.test("the context names no hub when none is configured", async (t) => {
  const { github, reporter } = await setup(t);
  const sha = "a".repeat(40);
  reporter.applied(sha, { created: 1, changed: 0, deleted: 0 });
  await reporter.flush();
  t.equal(github.status(sha, "rlark/sync")?.state, "success");
});

t.test("a GitHub outage never blocks a sync; statuses catch up, latest state per revision", async (t) => {
  const { github, clock, reporter } = await setup(t);
  github.fail("POST", STATUSES, 502, 1000);
  const sha = "b".repeat(40);
  let applied = false;
  const apply = reporter.wrap(async () => {
    applied = true;
    return { accepted: true, errors: [], changes: { created: 3, changed: 0, deleted: 0 } };
  });
  const result = await apply({ revision: sha, dir: "/nonexistent", path: "." });
  t.ok(applied && result.accepted, "the revision is applied while the host is down");
  await waitFor("the send to fail and a retry to wait", () => clock.pending === 1 || undefined);
  t.equal(github.statuses.length, 0, "nothing reached GitHub");
  t.equal(reporter.pending(), 1, "one revision waits, with its latest state only");
  github.clearFaults();
  const flushed = reporter.flush();
  clock.advance(1000);
  await flushed;
  t.same(
    github.statuses.map((s) => [s.sha, s.state, s.description]),
    [[sha, "success", "applied: 3 created, 0 changed, 0 deleted"]],
    "the catch-up sends the final state, not the stale pending",
  );
  t.same(github.violations, []);
});

t.test("refusal descriptions summarise the first errors and fit 140 characters", async (t) => {
  const errors = Array.from({ length: 5 }, (_, i) => ({
    file: `jobs/job-${i}.yaml`,
    line: i + 3,
    column: 1,
    kind: "Job",
    name: `job-${i}`,
    path: "/spec/tasks/0/agentType",
    rule: "schema/enum",
    message: "must be one of Kubernetes, Raw, Docker; a long explanation follows here",
  }));
  const text = describeRefused(errors);
  t.ok(text.length <= 140);
  t.match(text, /^refused, 5 errors: jobs\/job-0\.yaml:3 \/spec\/tasks\/0\/agentType: must be one of/);
  t.match(text, /…$/);
});
