import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import t from "tap";
import type { Hub } from "../../operators/hub/hub.ts";
import { createGitServer, runGit } from "../helpers/git-server.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rlark } from "../helpers/rlark-cli.ts";
import { waitFor } from "../helpers/wait-for.ts";

const beijing =
  "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: beijing\nspec:\n  runtime: kubernetes\n";

async function readyz(hub: Hub): Promise<{ status: number; body: string }> {
  const response = await fetch(`${hub.url}/readyz`);
  return { status: response.status, body: await response.text() };
}

t.test("the hub is not ready, and token create says so, until its first revision is applied", async (t) => {
  const git = await createGitServer();
  t.teardown(() => git.close());
  await git.commit({ "clusters/beijing.yaml": beijing });
  // The repository is not there yet when the hub starts: nothing can be applied.
  const later = path.join(git.root, "later.git");
  const { hub, dataDir } = await startHubOnGit(t, {
    git,
    repo: pathToFileURL(later).toString(),
    intervalMs: 100,
  });
  await waitFor("a failed first fetch", () => hub.source?.watcher.status().state === "FetchFailed");

  const before = await readyz(hub);
  t.equal(before.status, 503, "not ready before the first revision is applied");
  t.match(before.body, /not ready: the repository is not loaded yet/);
  const early = await rlark(["token", "create", "--cluster", "beijing", "--data-dir", dataDir]);
  t.equal(early.code, 1);
  t.match(early.stderr, /the hub has not finished loading the repository; try again/);
  t.notMatch(early.stderr, /declared/, "it does not blame git");

  await runGit(git.root, ["clone", "--quiet", "--bare", git.bare, later]);
  const ready = await waitFor("ready", async () => {
    const r = await readyz(hub);
    return r.status === 200 && r;
  });
  t.equal(ready.body, "ok\n");
  const created = await rlark(["token", "create", "--cluster", "beijing", "--data-dir", dataDir]);
  t.equal(created.code, 0, created.stderr);
  t.match(created.stdout, /^token: +rlt\./m);
  const undeclared = await rlark(["token", "create", "--cluster", "atlantis", "--data-dir", dataDir]);
  t.equal(undeclared.code, 1);
  t.match(undeclared.stderr, /no Cluster named atlantis is declared in git/, "now git is to blame");
});

t.test("a refused first revision makes the hub ready but degraded", async (t) => {
  const { hub } = await startHubOnGit(t, {
    intervalMs: 100,
    files: { "clusters/beijing.yaml": `${beijing}  colour: blue\n` },
  });
  const degraded = await waitFor("a decision on the first revision", async () => {
    const r = await readyz(hub);
    return r.status === 200 && r;
  });
  t.equal(hub.source?.watcher.status().state, "Invalid");
  t.match(degraded.body, /^degraded: revision [0-9a-f]{12} was refused \(see GET \/api\/v1\/source\)\n$/);
});

t.test("token create on a directory that holds no hub says so and creates nothing", async (t) => {
  const dir = path.join(await mkdtemp(path.join(tmpdir(), "rlark-ready-")), "nonexistent");
  const run = await rlark(["token", "create", "--cluster", "beijing", "--data-dir", dir]);
  t.equal(run.code, 2);
  t.match(run.stderr, /no hub data in .*nonexistent.*--data-dir/);
  t.notMatch(run.stderr, /declared|Usage:/);
  const { existsSync } = await import("node:fs");
  t.notOk(existsSync(dir), "no store or CA is created in a mistyped directory");
});
