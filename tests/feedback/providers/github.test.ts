import { generateKeyPairSync } from "node:crypto";
import t from "tap";
import {
  createGitHubProvider,
  FeedbackProviderError,
  fitDescription,
} from "../../../operators/feedback/providers/index.ts";
import { startGitHubStandIn } from "./github-stand-in.ts";

const repo = { owner: "acme", repo: "fleet" };
const sha = "c".repeat(40);

t.test("as a GitHub App, findings go out as check-run annotations, 50 per request", async (t) => {
  const github = await startGitHubStandIn(repo);
  t.teardown(() => github.close());
  // Keys are made in the test, never pasted in.
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const provider = createGitHubProvider({
    baseUrl: github.url,
    auth: {
      appId: 4242,
      privateKey: privateKey.export({ type: "pkcs1", format: "pem" }).toString(),
      installationId: 77,
    },
    retryBaseMs: 1,
  });
  t.equal(provider.checkRuns, true);
  const findings = Array.from({ length: 60 }, (_, i) => ({
    path: "jobs/a.yaml",
    line: i + 1,
    level: "failure" as const,
    message: `problem ${i}`,
    title: "Job a",
  }));
  await provider.publishFindings(repo, 2, sha, {
    name: "rlark/plan",
    summary: "invalid",
    findings,
    conclusion: "failure",
  });
  const tokenRequest = github.requests.find(
    (r) => r.operation === "/app/installations/{installation_id}/access_tokens",
  );
  t.ok(tokenRequest, "an installation token was requested");
  const jwt = tokenRequest?.authorization?.replace(/^bearer /i, "") ?? "";
  const claims = JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString()) as { iss: unknown };
  t.equal(String(claims.iss), "4242", "the App's JWT names the App");
  const created = github.requests.find((r) => r.operation === "/repos/{owner}/{repo}/check-runs");
  t.equal(
    created?.authorization,
    `token ${github.installationToken}`,
    "the check run is made with the installation token",
  );
  t.equal(github.checkRuns.length, 2, "created, then updated with the rest");
  const first = github.checkRuns[0] as {
    head_sha: string;
    conclusion: string;
    output: { annotations: unknown[] };
  };
  t.equal(first.head_sha, sha);
  t.equal(first.conclusion, "failure");
  t.equal(first.output.annotations.length, 50);
  t.equal((github.checkRuns[1] as { output: { annotations: unknown[] } }).output.annotations.length, 10);
  t.same(github.violations, []);
});

t.test("with a token, findings are one review with a comment per line", async (t) => {
  const github = await startGitHubStandIn(repo);
  t.teardown(() => github.close());
  const provider = createGitHubProvider({
    baseUrl: github.url,
    auth: { token: "ghp_token" },
    retryBaseMs: 1,
  });
  t.equal(provider.checkRuns, false);
  await provider.publishFindings(repo, 3, sha, {
    name: "rlark/plan",
    summary: "invalid",
    findings: [{ path: "a.yaml", line: 4, level: "failure", message: "bad" }],
    conclusion: "failure",
  });
  t.same(github.reviews[0]?.body, {
    commit_id: sha,
    event: "COMMENT",
    body: "invalid",
    comments: [{ path: "a.yaml", line: 4, side: "RIGHT", body: "bad" }],
  });
  t.same(github.violations, []);
});

t.test("comments are read across pages and pull requests are listed with fork detection", async (t) => {
  const github = await startGitHubStandIn(repo);
  t.teardown(() => github.close());
  const provider = createGitHubProvider({
    baseUrl: github.url,
    auth: { token: "ghp_token" },
    retryBaseMs: 1,
  });
  for (let i = 0; i < 105; i++) github.comments.set(i + 1, { id: i + 1, issue: 9, body: `c${i}` });
  const comments = await provider.listComments(repo, 9);
  t.equal(comments.length, 105);
  t.equal(comments.at(-1)?.body, "c104");
  github.pulls = [
    { number: 1, headSha: sha, headRef: "feature", baseRef: "main" },
    { number: 2, headSha: sha, headRef: "patch-1", baseRef: "main", headRepo: "forker/fleet" },
  ];
  const pulls = await provider.listOpenPullRequests(repo);
  t.same(
    pulls.map((p) => [p.number, p.fork]),
    [
      [1, false],
      [2, true],
    ],
  );
  t.same(github.violations, []);
});

t.test("a refused call names the operation and status, never the token", async (t) => {
  const github = await startGitHubStandIn(repo);
  t.teardown(() => github.close());
  const provider = createGitHubProvider({
    baseUrl: github.url,
    auth: { token: "ghp_supersecret" },
    retryBaseMs: 1,
    retries: 1,
  });
  github.fail("POST", "/repos/{owner}/{repo}/statuses/{sha}", 503, 5);
  const error = await provider
    .setCommitStatus(repo, sha, { context: "rlark/sync", state: "success", description: "x" })
    .catch((e: unknown) => e);
  t.type(error, FeedbackProviderError);
  t.match((error as Error).message, /setting a commit status on acme\/fleet failed \(HTTP 503\)/);
  t.notMatch((error as Error).message, /supersecret/);
  t.equal(github.requests.length, 2, "retried once, as configured");
});

t.test("descriptions are shortened to GitHub's 140 characters on a word boundary", async (t) => {
  const long = `refused, 3 errors: ${"word ".repeat(60)}`;
  const fitted = fitDescription(long);
  t.ok(fitted.length <= 140);
  t.match(fitted, /word…$/);
  t.equal(fitDescription("short  and\nflat"), "short and flat");
});
