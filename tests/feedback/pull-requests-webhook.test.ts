import { createHmac } from "node:crypto";
import { sign } from "@octokit/webhooks-methods";
import t from "tap";
import { parsePullRequestWebhook } from "../../operators/feedback/pull-request-webhook.ts";
import { pullRequestPayload } from "./pull-requests-fixture.ts";

const repo = { owner: "Codertocat", repo: "Hello-World" };
const options = { secrets: ["old-secret", "new-secret"], repo, branch: "master" };
const sha = "1".repeat(40);

async function github(payload: unknown, secret = "new-secret", event = "pull_request") {
  const body = Buffer.from(JSON.stringify(payload));
  return parsePullRequestWebhook(
    {
      headers: {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": "abc",
        "X-Hub-Signature-256": await sign(secret, body.toString()),
      },
      body,
    },
    options,
  );
}

t.test("a signed opened event names the pull request, its head and whether it is a fork", async (t) => {
  const verdict = await github(pullRequestPayload("opened", sha));
  t.equal(verdict.status, 202);
  t.match(verdict, {
    event: { delivery: "abc", number: 2, headSha: sha, headRef: "changes", baseRef: "master", fork: false },
  });
  const old = await github(pullRequestPayload("synchronize", sha), "old-secret");
  t.equal(old.status, 202, "a secret being rotated out is still accepted");
});

t.test("forged, unsigned or unconfigured webhooks are refused with 401", async (t) => {
  t.equal((await github(pullRequestPayload("opened", sha), "forged")).status, 401);
  const body = Buffer.from(JSON.stringify(pullRequestPayload("opened", sha)));
  const unsigned = await parsePullRequestWebhook(
    { headers: { "x-github-event": "pull_request" }, body },
    options,
  );
  t.equal(unsigned.status, 401);
  const none = await parsePullRequestWebhook(
    {
      headers: {
        "x-github-event": "pull_request",
        "x-hub-signature-256": await sign("any", body.toString()),
      },
      body,
    },
    { ...options, secrets: [] },
  );
  t.equal(none.status, 401);
  t.match(none.message, /no webhook secret/);
});

t.test("events that move no head are answered without a review", async (t) => {
  const labeled = pullRequestPayload("opened", sha);
  labeled.action = "labeled";
  t.match(await github(labeled), { status: 202, message: /ignored: pull_request labeled/ });
  t.match(await github({ zen: "hi" }, "new-secret", "ping"), { status: 204 });
  t.match(await github({}, "new-secret", "issues"), { status: 202, message: /not a pull_request event/ });
  const other = pullRequestPayload("opened", sha);
  (other.repository as { full_name: string }).full_name = "someone/else";
  t.match(await github(other), { status: 202, message: /not the tracked one/ });
  const intoDev = pullRequestPayload("opened", sha);
  (intoDev.pull_request.base as { ref: string }).ref = "dev";
  t.match(await github(intoDev), { status: 202, message: /into dev, not master/ });
});

t.test("Gitea's pull_request webhooks (X-Gitea-Signature, action synchronized) are understood", async (t) => {
  const payload = {
    action: "synchronized",
    number: 12,
    pull_request: {
      number: 12,
      head: { sha, ref: "feature", repo: { full_name: "forker/Hello-World" } },
      base: { ref: "master", repo: { full_name: "Codertocat/Hello-World" } },
    },
    repository: {
      full_name: "Codertocat/Hello-World",
      html_url: "https://gitea.test/Codertocat/Hello-World",
    },
  };
  const body = Buffer.from(JSON.stringify(payload));
  const signature = createHmac("sha256", "new-secret").update(body).digest("hex");
  const verdict = await parsePullRequestWebhook(
    {
      headers: { "x-gitea-event": "pull_request", "x-gitea-delivery": "g-1", "x-gitea-signature": signature },
      body,
    },
    options,
  );
  t.match(verdict, { status: 202, event: { number: 12, headSha: sha, fork: true, delivery: "g-1" } });
  const forged = await parsePullRequestWebhook(
    { headers: { "x-gitea-event": "pull_request", "x-gitea-signature": "0".repeat(64) }, body },
    options,
  );
  t.equal(forged.status, 401);
});
