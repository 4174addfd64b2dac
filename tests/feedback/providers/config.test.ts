import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { loadFeedbackProvider, repoRefFromUrl } from "../../../operators/feedback/providers/index.ts";
import { startGitHubStandIn } from "./github-stand-in.ts";

t.test("owner/repo is read from any form of the repository URL", async (t) => {
  t.same(repoRefFromUrl("https://github.com/acme/fleet.git"), { owner: "acme", repo: "fleet" });
  t.same(repoRefFromUrl("git@github.example.com:acme/fleet.git"), { owner: "acme", repo: "fleet" });
  t.same(repoRefFromUrl("https://x-access-token:secret@gitea.test/Org/Repo"), { owner: "org", repo: "repo" });
  t.throws(() => repoRefFromUrl("fleet"), /cannot tell owner\/name/);
});

t.test("credentials come from a file or the environment and reach only the API", async (t) => {
  const github = await startGitHubStandIn({ owner: "acme", repo: "fleet" });
  const dir = await mkdtemp(join(tmpdir(), "rlark-creds-"));
  t.teardown(async () => {
    await github.close();
    await rm(dir, { recursive: true, force: true });
  });
  await writeFile(join(dir, "token"), "ghp_fromfile\n");
  const fromFile = await loadFeedbackProvider(
    { kind: "github", apiUrl: github.url, tokenFile: join(dir, "token"), env: {} },
    { retryBaseMs: 1 },
  );
  await fromFile.setCommitStatus({ owner: "acme", repo: "fleet" }, "a".repeat(40), {
    context: "rlark/sync",
    state: "pending",
    description: "applying",
  });
  t.equal(github.requests[0]?.authorization, "token ghp_fromfile");
  const fromEnv = await loadFeedbackProvider(
    { kind: "github", apiUrl: github.url, env: { RLARK_FEEDBACK_TOKEN: "ghp_fromenv" } },
    { retryBaseMs: 1 },
  );
  await fromEnv.listComments({ owner: "acme", repo: "fleet" }, 1);
  t.equal(github.requests[1]?.authorization, "token ghp_fromenv");
  t.same(github.violations, []);
});

t.test("a missing credential is a clear error that names where to put it", async (t) => {
  await t.rejects(loadFeedbackProvider({ kind: "github", env: {} }), /RLARK_FEEDBACK_TOKEN/);
  await t.rejects(
    loadFeedbackProvider({ kind: "gitea", env: { RLARK_FEEDBACK_TOKEN: "x" } }),
    /Gitea needs its API URL/,
  );
  await t.rejects(
    loadFeedbackProvider({ kind: "github", appId: "1", env: { RLARK_GITHUB_APP_PRIVATE_KEY: "k" } }),
    /installation/,
  );
  const gitea = await loadFeedbackProvider({
    kind: "gitea",
    apiUrl: "https://gitea.test/api/v1",
    env: { RLARK_FEEDBACK_TOKEN: "x" },
  });
  t.equal(gitea.kind, "gitea");
});
