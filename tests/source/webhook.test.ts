import { createHmac } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { WebhookDefinition } from "@octokit/webhooks-examples";
import { sign } from "@octokit/webhooks-methods";
import t from "tap";
import { handleGitWebhook, loadWebhookSecrets, normaliseRepoUrl } from "../../operators/source/index.ts";

const examples = createRequire(import.meta.url)("@octokit/webhooks-examples") as WebhookDefinition[];

function example(name: string): Record<string, unknown> {
  const found = examples.find((d) => d.name === name)?.examples[0];
  if (!found) throw new Error(`no ${name} example`);
  return structuredClone(found) as unknown as Record<string, unknown>;
}

/** GitHub's own push example (Codertocat/Hello-World), moved to a branch push. */
function githubPush(ref = "refs/heads/main"): Buffer {
  return Buffer.from(JSON.stringify({ ...example("push"), ref }));
}

const secret = "It's a Secret to Everybody";
const options = {
  secrets: [secret],
  repoUrl: "https://github.com/Codertocat/Hello-World.git",
  branch: "main",
};

async function githubHeaders(body: Buffer, key = secret, event = "push") {
  return {
    "x-github-event": event,
    "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    "x-hub-signature-256": await sign(key, body.toString("utf8")),
    "content-type": "application/json",
  };
}

t.test("a GitHub push to the tracked branch with a valid signature triggers a fetch", async (t) => {
  const body = githubPush();
  const result = await handleGitWebhook({ headers: await githubHeaders(body), body }, options);
  t.equal(result.status, 202);
  t.equal(result.trigger, true);
  t.match(result.message, /refs\/heads\/main/);
});

t.test("the repository matches by clone, ssh or html URL and by owner/name", async (t) => {
  const body = githubPush();
  const headers = await githubHeaders(body);
  for (const repoUrl of [
    "git@github.com:Codertocat/Hello-World.git",
    "ssh://git@github.com/codertocat/hello-world",
    "https://github.com/Codertocat/Hello-World",
    "https://x-access-token:tok@github.com/Codertocat/Hello-World.git/",
    "https://git.internal.example/Codertocat/Hello-World.git",
  ]) {
    const result = await handleGitWebhook({ headers, body }, { ...options, repoUrl });
    t.equal(result.trigger, true, repoUrl);
  }
});

t.test("a rotated secret: any configured secret is accepted", async (t) => {
  const body = githubPush();
  const result = await handleGitWebhook(
    { headers: await githubHeaders(body, "new secret"), body },
    { ...options, secrets: [secret, "new secret"] },
  );
  t.equal(result.status, 202);
  t.equal(result.trigger, true);
});

t.test("a wrong signature is 401 and triggers nothing", async (t) => {
  const body = githubPush();
  const result = await handleGitWebhook(
    { headers: await githubHeaders(body, "not the secret"), body },
    options,
  );
  t.same(result, { status: 401, message: "X-Hub-Signature-256 does not match", trigger: false });

  const tampered = Buffer.from(body.toString("utf8").replace("refs/heads/main", "refs/heads/evil"));
  const again = await handleGitWebhook({ headers: await githubHeaders(body), body: tampered }, options);
  t.equal(again.status, 401, "a body changed after signing fails too");
});

t.test("a missing signature is 401", async (t) => {
  const body = githubPush();
  const headers: Record<string, string> = await githubHeaders(body);
  delete headers["x-hub-signature-256"];
  const result = await handleGitWebhook({ headers, body }, options);
  t.equal(result.status, 401);
  t.equal(result.trigger, false);
  t.match(result.message, /missing/);
});

t.test("without any configured secret every webhook is refused", async (t) => {
  const body = githubPush();
  const result = await handleGitWebhook(
    { headers: await githubHeaders(body), body },
    { ...options, secrets: [] },
  );
  t.equal(result.status, 401);
  t.equal(result.trigger, false);
});

t.test("a push to another branch is ignored with 202 and a reason", async (t) => {
  const body = githubPush("refs/heads/feature");
  const result = await handleGitWebhook({ headers: await githubHeaders(body), body }, options);
  t.equal(result.status, 202);
  t.equal(result.trigger, false);
  t.match(result.message, /ignored: push to refs\/heads\/feature/);

  const tag = Buffer.from(JSON.stringify(example("push")));
  const tagResult = await handleGitWebhook({ headers: await githubHeaders(tag), body: tag }, options);
  t.equal(tagResult.trigger, false, "GitHub's example tag push is ignored too");
});

t.test("a push to another repository is ignored with 202 and a reason", async (t) => {
  const body = githubPush();
  const result = await handleGitWebhook(
    { headers: await githubHeaders(body), body },
    { ...options, repoUrl: "https://github.com/someone/else.git" },
  );
  t.equal(result.status, 202);
  t.equal(result.trigger, false);
  t.match(result.message, /Codertocat\/Hello-World, not the tracked repository/);
});

t.test("GitHub's ping is answered 204; other events are ignored", async (t) => {
  const ping = Buffer.from(JSON.stringify(example("ping")));
  const pong = await handleGitWebhook(
    { headers: await githubHeaders(ping, secret, "ping"), body: ping },
    options,
  );
  t.equal(pong.status, 204);
  t.equal(pong.trigger, false);

  const issues = Buffer.from(JSON.stringify(example("issues")));
  const ignored = await handleGitWebhook(
    { headers: await githubHeaders(issues, secret, "issues"), body: issues },
    options,
  );
  t.equal(ignored.status, 202);
  t.equal(ignored.trigger, false);
});

t.test("a request from neither GitHub nor Gitea is 400", async (t) => {
  const result = await handleGitWebhook({ headers: {}, body: Buffer.from("{}") }, options);
  t.equal(result.status, 400);
});

/** The shape Gitea and Forgejo send for a push (trimmed to what a hub reads, plus some noise). */
function giteaPush(ref = "refs/heads/main"): Buffer {
  return Buffer.from(
    JSON.stringify({
      ref,
      before: "28e1879d029cb852e4844d9c718537df08844e03",
      after: "bffeb74224043ba2feb48d137756c8a9331c449a",
      compare_url: "https://gitea.example.com/rlark/fleet/compare/28e1879...bffeb74",
      commits: [{ id: "bffeb74224043ba2feb48d137756c8a9331c449a", message: "scale training\n" }],
      repository: {
        id: 140,
        owner: { login: "rlark" },
        name: "fleet",
        full_name: "rlark/fleet",
        html_url: "https://gitea.example.com/rlark/fleet",
        ssh_url: "ssh://git@gitea.example.com:2222/rlark/fleet.git",
        clone_url: "https://gitea.example.com/rlark/fleet.git",
        default_branch: "main",
      },
      pusher: { login: "alice" },
    }),
  );
}

function giteaHeaders(body: Buffer, key = secret, event = "push"): Record<string, string> {
  return {
    "X-Gitea-Event": event,
    "X-Gitea-Delivery": "b6b5b9b8-6a3f-4a2a-8c1e-2f0e3c7a1d11",
    "X-Gitea-Signature": createHmac("sha256", key).update(body).digest("hex"),
    "Content-Type": "application/json",
  };
}

t.test("a Gitea push with a valid X-Gitea-Signature triggers a fetch", async (t) => {
  const giteaOptions = { ...options, repoUrl: "ssh://git@gitea.example.com:2222/rlark/fleet.git" };
  const body = giteaPush();
  const result = await handleGitWebhook({ headers: giteaHeaders(body), body }, giteaOptions);
  t.equal(result.status, 202);
  t.equal(result.trigger, true);

  const wrong = await handleGitWebhook({ headers: giteaHeaders(body, "nope"), body }, giteaOptions);
  t.equal(wrong.status, 401);
  t.equal(wrong.trigger, false);

  const headers = giteaHeaders(body);
  delete headers["X-Gitea-Signature"];
  t.equal((await handleGitWebhook({ headers, body }, giteaOptions)).status, 401, "missing signature");

  const other = giteaPush("refs/heads/dev");
  const ignored = await handleGitWebhook({ headers: giteaHeaders(other), body: other }, giteaOptions);
  t.equal(ignored.status, 202);
  t.equal(ignored.trigger, false);

  const forgejo = { ...giteaHeaders(body) };
  delete forgejo["X-Gitea-Event"];
  forgejo["X-Forgejo-Event"] = "push";
  t.equal(
    (await handleGitWebhook({ headers: forgejo, body }, giteaOptions)).trigger,
    true,
    "Forgejo's headers",
  );
});

t.test("repository URLs normalise to host/owner/name", async (t) => {
  t.equal(normaliseRepoUrl("git@github.com:Org/Repo.git"), "github.com/org/repo");
  t.equal(normaliseRepoUrl("https://user:token@GitHub.com/Org/Repo.git/"), "github.com/org/repo");
  t.equal(normaliseRepoUrl("ssh://git@gitea.example.com:2222/org/repo.git"), "gitea.example.com/org/repo");
  t.equal(normaliseRepoUrl("https://gitea.example.com:3000/org/repo"), "gitea.example.com/org/repo");
});

t.test("webhook secrets come from the file (one per line) or RLARK_WEBHOOK_SECRET", async (t) => {
  const dir = t.testdir();
  const file = join(dir, "secret");
  await writeFile(file, "current\n\n# rotating out:\nprevious\n");
  t.same(await loadWebhookSecrets({ file, env: { RLARK_WEBHOOK_SECRET: "ignored" } }), [
    "current",
    "previous",
  ]);
  t.same(await loadWebhookSecrets({ env: { RLARK_WEBHOOK_SECRET: "from-env\n" } }), ["from-env"]);
  t.same(await loadWebhookSecrets({ env: {} }), []);
});
