// The hub posts rlark/sync commit statuses to its code host: the GitHub REST stand-in, whose
// every request and response is checked against GitHub's published OpenAPI description.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { repoRefFromUrl } from "../../operators/feedback/providers/index.ts";
import { startGitHubStandIn } from "../feedback/providers/github-stand-in.ts";
import { createGitServer } from "../helpers/git-server.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const domain = (name: string, cidr: string) =>
  `apiVersion: rlinf.io/v1alpha1\nkind: Domain\nmetadata:\n  name: ${name}\nspec:\n  cidr: ${cidr}\n`;

t.test(
  "every synced revision gets an rlark/sync status: success with counts, failure with the first error",
  async (t) => {
    const git = await createGitServer();
    t.teardown(() => git.close());
    const good = await git.commit({ "a.yaml": domain("a", "10.0.1.0/24") });
    const github = await startGitHubStandIn(repoRefFromUrl(git.fileUrl));
    t.teardown(() => github.close());
    const tokenFile = path.join(await mkdtemp(path.join(tmpdir(), "rlark-feedback-")), "token");
    await writeFile(tokenFile, "ghs_feedbacktoken0123456789\n", { mode: 0o600 });
    await startHubOnGit(t, {
      git,
      feedback: {
        provider: { kind: "github", apiUrl: github.url, tokenFile },
        hubName: "lab",
        pollIntervalMs: 0,
      },
    });

    await waitFor(
      "success status",
      () => github.status(good, "rlark/sync (lab)")?.state === "success",
      onRealServers,
    );
    t.match(github.status(good, "rlark/sync (lab)")?.description, /applied: 1 created, 0 changed, 0 deleted/);
    const bad = await git.commit({ "b.yaml": domain("b", "10.0.1.0/25") });
    await waitFor(
      "failure status",
      () => github.status(bad, "rlark/sync (lab)")?.state === "failure",
      onRealServers,
    );
    t.match(
      github.status(bad, "rlark/sync (lab)")?.description,
      /b\.yaml:6 \/spec\/cidr: 10\.0\.1\.0\/25 overlaps/,
    );
    t.same(github.violations, [], "every exchange matches GitHub's OpenAPI description");
    t.ok(
      github.requests.every(
        (r) =>
          r.authorization === "token ghs_feedbacktoken0123456789" || r.authorization?.startsWith("Bearer"),
      ),
      "the token from the file authenticates every request",
    );
  },
);
