import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import t from "tap";
import { FakeClock } from "../../operators/lib/clock.ts";
import {
  createGitRepository,
  createGitWatcher,
  createGitWebhookHttpHandler,
  type SourceStatus,
} from "../../operators/source/index.ts";
import { createGitServer, waitFor } from "../helpers/git-server.ts";

const secret = "webhook-test-secret";

async function listen(handler: Parameters<typeof createServer>[1]) {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { server, base: `http://127.0.0.1:${port}` };
}

function pushPayload(ref: string, fullName = "rlark/manifests") {
  return JSON.stringify({
    ref,
    repository: {
      full_name: fullName,
      clone_url: `https://github.com/${fullName}.git`,
      ssh_url: `git@github.com:${fullName}.git`,
      html_url: `https://github.com/${fullName}`,
    },
  });
}

t.test("a signed push webhook over HTTP makes the watcher fetch and apply at once", async (t) => {
  const git = await createGitServer({ name: "rlark/manifests.git" });
  const dataDir = await mkdtemp(join(tmpdir(), "rlark-data-"));
  t.teardown(async () => {
    await git.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  const clock = new FakeClock();
  const applied: string[] = [];
  const watcher = createGitWatcher({
    repository: createGitRepository({ url: git.fileUrl, branch: "main", dataDir }),
    applyRevision: async ({ revision }) => {
      applied.push(revision);
      return { accepted: true, errors: [] };
    },
    dataDir,
    clock,
  });
  await git.commit({ "a.yaml": "a: 1\n" });
  await watcher.start();
  await watcher.trigger();
  let latest: SourceStatus = watcher.status();
  watcher.on("status", (s) => {
    latest = s;
  });

  let triggers = 0;
  const { server, base } = await listen(
    createGitWebhookHttpHandler({
      secrets: () => [secret],
      // The repository is local here; the payload names it by owner/name.
      repoUrl: git.bare,
      branch: "main",
      onTrigger: () => {
        triggers++;
        void watcher.trigger();
      },
    }),
  );
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));

  const pushed = await git.commit({ "b.yaml": "b: 2\n" });
  const body = pushPayload("refs/heads/main");
  const response = await fetch(`${base}/hooks/git`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": "push",
      "x-hub-signature-256": await sign(secret, body),
    },
    body,
  });
  t.equal(response.status, 202);
  t.match(((await response.json()) as { message: string }).message, /fetching/);
  await waitFor(() => latest.lastAppliedRevision === pushed, "the pushed revision to be applied");
  t.equal(applied.at(-1), pushed, "applied without waiting for the poll interval");
  t.equal(triggers, 1);

  const forged = await fetch(`${base}/hooks/git`, {
    method: "POST",
    headers: { "x-github-event": "push", "x-hub-signature-256": await sign("guess", body) },
    body,
  });
  t.equal(forged.status, 401);
  const unsigned = await fetch(`${base}/hooks/git`, {
    method: "POST",
    headers: { "x-github-event": "push" },
    body,
  });
  t.equal(unsigned.status, 401);
  const otherBranch = pushPayload("refs/heads/feature");
  const ignored = await fetch(`${base}/hooks/git`, {
    method: "POST",
    headers: { "x-github-event": "push", "x-hub-signature-256": await sign(secret, otherBranch) },
    body: otherBranch,
  });
  t.equal(ignored.status, 202);
  t.equal(triggers, 1, "neither forged, unsigned nor other-branch pushes trigger");
  await watcher.stop();
});

t.test("the HTTP adapter refuses other methods and oversized bodies", async (t) => {
  const { server, base } = await listen(
    createGitWebhookHttpHandler({
      secrets: [secret],
      repoUrl: "https://github.com/rlark/manifests.git",
      branch: "main",
      onTrigger: () => t.fail("must not trigger"),
      maxBodyBytes: 1024,
    }),
  );
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const get = await fetch(`${base}/hooks/git`);
  t.equal(get.status, 405);
  const big = "x".repeat(4096);
  const tooLarge = await fetch(`${base}/hooks/git`, {
    method: "POST",
    headers: { "x-github-event": "push", "x-hub-signature-256": await sign(secret, big) },
    body: big,
  });
  t.equal(tooLarge.status, 413);
  const pingBody = JSON.stringify({ zen: "Keep it logically awesome." });
  const ping = await fetch(`${base}/hooks/git`, {
    method: "POST",
    headers: { "x-github-event": "ping", "x-hub-signature-256": await sign(secret, pingBody) },
    body: pingBody,
  });
  t.equal(ping.status, 204);
});
