import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import t, { type Test } from "tap";
import { FakeClock } from "../../operators/lib/clock.ts";
import {
  createGitRepository,
  createGitWatcher,
  createGitWebhookHttpHandler,
  createWebhookIntake,
  type GitWebhookHttpOptions,
  type SourceStatus,
} from "../../operators/source/index.ts";
import { createGitServer } from "../helpers/git-server.ts";
import { onRealServers, waitFor as until, waitFor } from "../helpers/wait-for.ts";

const secret = "webhook-test-secret";

/**
 * The webhook endpoint for `secret` and the main branch of rlark/manifests on 127.0.0.1, closed
 * when the test ends; a push it verifies fails the test unless `options` say what to do. Its base URL.
 */
async function serveWebhook(t: Test, options: Partial<GitWebhookHttpOptions> = {}): Promise<string> {
  const server = createServer(
    createGitWebhookHttpHandler({
      secrets: [secret],
      repoUrl: "https://github.com/rlark/manifests.git",
      branch: "main",
      onTrigger: () => t.fail("must not trigger"),
      ...options,
    }),
  );
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
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
  const base = await serveWebhook(t, {
    secrets: () => [secret],
    // The repository is local here; the payload names it by owner/name.
    repoUrl: git.bare,
    onTrigger: () => {
      triggers++;
      void watcher.trigger();
    },
  });

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
  await waitFor(
    "the pushed revision to be applied",
    () => latest.lastAppliedRevision === pushed,
    onRealServers,
  );
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
  const base = await serveWebhook(t, {
    intake: createWebhookIntake({ maxBodyBytes: 1024 }),
  });
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

/** A client on a raw socket: sends what it is given and keeps everything the server answers. */
async function rawClient(base: string, head: string, body = "") {
  const { port } = new URL(base);
  const socket = connect(Number(port), "127.0.0.1");
  await once(socket, "connect");
  let answer = "";
  let closed = false;
  socket.on("data", (chunk: Buffer) => {
    answer += chunk.toString("latin1");
  });
  socket.on("error", () => {});
  socket.on("close", () => {
    closed = true;
  });
  socket.write(`${head.trim().split("\n").join("\r\n")}\r\n\r\n${body}`);
  return {
    socket,
    answer: () => answer,
    /** The status code of the server's answer, once it came. */
    status: () => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0) || undefined,
    closed: () => closed,
  };
}

function pushHead(length: number | "chunked", extra = "") {
  return [
    "POST /hooks/git HTTP/1.1",
    "Host: hub",
    "X-GitHub-Event: push",
    "X-Hub-Signature-256: sha256=0000",
    length === "chunked" ? "Transfer-Encoding: chunked" : `Content-Length: ${length}`,
    extra,
  ]
    .filter(Boolean)
    .join("\n");
}

t.test("a webhook without event or signature headers is refused before its body is read", async (t) => {
  const base = await serveWebhook(t);
  // Each announces a large body and never sends it: an answer can only come from the headers.
  const anonymous = await rawClient(base, "POST /hooks/git HTTP/1.1\nHost: hub\nContent-Length: 1000000");
  const unsigned = await rawClient(
    base,
    "POST /hooks/git HTTP/1.1\nHost: hub\nX-GitHub-Event: push\nContent-Length: 1000000",
  );
  const giteaUnsigned = await rawClient(
    base,
    "POST /hooks/git HTTP/1.1\nHost: hub\nX-Gitea-Event: push\nContent-Length: 1000000",
  );
  t.teardown(() =>
    [anonymous, unsigned, giteaUnsigned].forEach((c) => {
      c.socket.destroy();
    }),
  );
  t.equal(await until("an answer without reading", () => anonymous.status()), 400);
  t.match(anonymous.answer(), /not a GitHub or Gitea webhook/);
  t.equal(await until("an answer without reading", () => unsigned.status()), 401);
  t.match(unsigned.answer(), /missing X-Hub-Signature-256/);
  t.equal(await until("an answer without reading", () => giteaUnsigned.status()), 401);
  t.match(giteaUnsigned.answer(), /missing X-Gitea-Signature/);
  await until("refused connections closed", () => anonymous.closed() && unsigned.closed());

  // Nothing configured to check against: refused before reading too.
  const noneBase = await serveWebhook(t, {
    secrets: [],
  });
  const signed = await rawClient(noneBase, pushHead(1_000_000));
  t.teardown(() => signed.socket.destroy());
  t.equal(await until("an answer without reading", () => signed.status()), 401);
  t.match(signed.answer(), /no webhook secret is configured/);
  const huge = await rawClient(base, pushHead(100 * 1024 * 1024));
  t.teardown(() => huge.socket.destroy());
  t.equal(await until("an answer without reading", () => huge.status()), 413, "a declared size over the cap");
});

t.test(
  "bodies in flight share one byte budget: over it 503 without reading; an aborted body frees its share",
  async (t) => {
    const intake = createWebhookIntake({
      maxBodyBytes: 40_000,
      budgetBytes: 64 * 1024,
      bodyTimeoutMs: 600_000,
    });
    const base = await serveWebhook(t, {
      onTrigger: () => {},
      intake,
    });
    // Two bodies of 30 kB announced, a little of each sent: the budget holds both...
    const first = await rawClient(base, pushHead(30_000), "x".repeat(1000));
    const second = await rawClient(base, pushHead(30_000), "x".repeat(1000));
    t.teardown(() =>
      [first, second].forEach((c) => {
        c.socket.destroy();
      }),
    );
    await until("both bodies reserved", () => intake.inFlightBytes() === 60_000);
    // ...the third does not fit and is answered at once.
    const third = await rawClient(base, pushHead(20_000));
    t.teardown(() => third.socket.destroy());
    t.equal(await until("an answer without reading", () => third.status()), 503);
    t.match(third.answer(), /retry-after/i);
    await until("the refused connection closed", () => third.closed());
    // A chunked body is counted as it arrives.
    const chunked = await rawClient(
      base,
      pushHead("chunked"),
      `${(30_000).toString(16)}\r\n${"y".repeat(30_000)}\r\n`,
    );
    t.teardown(() => chunked.socket.destroy());
    t.equal(await until("the chunked body refused", () => chunked.status()), 503);
    t.equal(intake.inFlightBytes(), 60_000, "what the refused ones sent is not held");

    first.socket.destroy();
    await until("an aborted body's share released", () => intake.inFlightBytes() === 30_000);
    const body = pushPayload("refs/heads/main");
    const ok = await fetch(`${base}/hooks/git`, {
      method: "POST",
      headers: { "x-github-event": "push", "x-hub-signature-256": await sign(secret, body) },
      body,
    });
    t.equal(ok.status, 202, "a real delivery fits again");
    second.socket.destroy();
    await until("the budget released", () => intake.inFlightBytes() === 0);
  },
);

t.test("a body that does not arrive within the body timeout is answered 408 and closed", async (t) => {
  const intake = createWebhookIntake({ bodyTimeoutMs: 200 });
  const base = await serveWebhook(t, {
    onTrigger: () => {},
    intake,
  });
  const slow = await rawClient(base, pushHead(30_000), "x".repeat(1000));
  t.teardown(() => slow.socket.destroy());
  t.equal(await until("the body timed out", () => slow.status()), 408);
  t.match(slow.answer(), /did not arrive within/);
  await until("the connection closed", () => slow.closed());
  t.equal(intake.inFlightBytes(), 0, "and its share of the budget is free");
});

t.test(
  "a replayed delivery is answered 200 and does nothing; a forged one does not spoil its id",
  async (t) => {
    let triggers = 0;
    const base = await serveWebhook(t, {
      onTrigger: () => {
        triggers++;
      },
    });
    const body = pushPayload("refs/heads/main");
    const deliver = async (delivery: string, key = secret) =>
      fetch(`${base}/hooks/git`, {
        method: "POST",
        headers: {
          "x-github-event": "push",
          "x-github-delivery": delivery,
          "x-hub-signature-256": await sign(key, body),
        },
        body,
      });
    t.equal((await deliver("d-1")).status, 202);
    const replay = await deliver("d-1");
    t.equal(replay.status, 200);
    t.match(((await replay.json()) as { message: string }).message, /duplicate delivery d-1/);
    t.equal(triggers, 1, "the replay fetched nothing");
    t.equal((await deliver("d-2", "forged")).status, 401);
    t.equal((await deliver("d-2")).status, 202, "the genuine delivery after a forged one with its id");
    t.equal(triggers, 2);
  },
);
