// Webhook requests from anyone who reaches the hub's port: headers of GitHub and Gitea (some
// signed right), bodies shaped like push and pull_request payloads, broken, or raw bytes.
import { createHmac } from "node:crypto";
import fc from "fast-check";
import { parsePullRequestWebhook } from "../../../operators/feedback/index.ts";
import { handleGitWebhook } from "../../../operators/source/index.ts";
import { validAndBroken } from "../schema-arbitrary.ts";
import { clearly, type FuzzTarget } from "../target.ts";

const SECRET = "fuzz-secret";
const REPO = "https://git.example/org/repo.git";

const repository = fc.record({
  clone_url: fc.oneof(fc.constant(REPO), fc.webUrl()),
  html_url: fc.oneof(fc.constant("https://git.example/org/repo"), fc.webUrl()),
  full_name: fc.oneof(fc.constant("org/repo"), fc.string()),
  ssh_url: fc.string(),
});
const sha = fc.stringMatching(/^[0-9a-f]{40}$/);
const push = fc.record({
  ref: fc.oneof(fc.constant("refs/heads/main"), fc.string()),
  before: sha,
  after: sha,
  repository,
  deleted: fc.boolean(),
});
const pullRequest = fc.record({
  action: fc.constantFrom("opened", "synchronize", "reopened", "closed", "edited"),
  number: fc.integer(),
  pull_request: fc.record({
    number: fc.integer(),
    head: fc.record({ sha, ref: fc.string(), repo: repository }),
    base: fc.record({ ref: fc.oneof(fc.constant("main"), fc.string()), repo: repository }),
  }),
  repository,
});
const body = fc.oneof(
  {
    weight: 4,
    arbitrary: validAndBroken(fc.oneof(push, pullRequest)).map((v) => Buffer.from(JSON.stringify(v))),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)) },
);
const headerValue = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.array(fc.string({ maxLength: 20 }), { maxLength: 3 }),
);

interface Request {
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

const request: fc.Arbitrary<Request> = fc
  .tuple(
    body,
    fc.constantFrom("github", "gitea", "none"),
    fc.constantFrom("push", "pull_request", "ping", "issues", ""),
    fc.constantFrom("right", "wrong", "missing", "garbage"),
    fc.dictionary(
      fc.constantFrom(
        "content-type",
        "x-github-delivery",
        "x-hub-signature",
        "x-gitea-signature",
        "x-github-event",
        "x-hub-signature-256",
      ),
      headerValue,
      { maxKeys: 3 },
    ),
  )
  .map(([body, provider, event, signature, extra]) => {
    const hmac = createHmac("sha256", SECRET).update(body).digest("hex");
    const headers: Request["headers"] = { ...extra };
    if (provider === "github") {
      headers["x-github-event"] = event;
      if (signature !== "missing")
        headers["x-hub-signature-256"] =
          signature === "right"
            ? `sha256=${hmac}`
            : signature === "wrong"
              ? `sha256=${"0".repeat(64)}`
              : "sha256=zz";
    } else if (provider === "gitea") {
      headers["x-gitea-event"] = event;
      if (signature !== "missing") headers["x-gitea-signature"] = signature === "right" ? hmac : "nothex";
    }
    return { headers, body };
  });

export const webhooks: FuzzTarget<Request> = {
  name: "webhooks",
  about: "webhook headers and bodies: source/webhook.ts (push) and feedback's pull_request intake",
  input: request,
  async run(req) {
    await clearly(() => handleGitWebhook(req, { secrets: [SECRET], repoUrl: REPO, branch: "main" }));
    await clearly(() =>
      parsePullRequestWebhook(req, {
        secrets: [SECRET],
        repo: { owner: "org", name: "repo" } as never,
        branch: "main",
      }),
    );
  },
};
