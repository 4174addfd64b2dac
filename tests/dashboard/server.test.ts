// The dashboard's server side on a real hub, real git and real HTTP: login, sessions on the API,
// the live event stream and the static assets.
import { once } from "node:events";
import { stat } from "node:fs/promises";
import { connect } from "node:net";
import path from "node:path";
import t from "tap";
import { hashPassword } from "../../operators/dashboard/auth/index.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";
import {
  exampleRepository,
  FAST,
  login,
  openEvents,
  startDashboardHub,
  synced,
  userYaml,
} from "./dashboard-hub.ts";

t.test(
  "a User from git logs in with its password; the session opens every /api route; a wrong one is refused",
  async (t) => {
    const git = await exampleRepository(t);
    const { hub } = await startDashboardHub(t, git, { sessionTtlSeconds: 600 });
    await synced(hub);

    const ok = await login(hub, { username: "carol", password: "correct horse" });
    t.equal(ok.status, 200);
    t.equal(ok.body.subject, "carol");
    t.equal(ok.body.role, "user");
    const token = ok.body.token as string;
    const [header, payload] = token
      .split(".")
      .slice(0, 2)
      .map((p) => JSON.parse(Buffer.from(p, "base64url").toString()));
    t.same(header, { alg: "HS256", typ: "JWT" });
    t.equal(payload.sub, "carol");
    t.equal(payload.role, "user");
    t.equal(payload.exp - payload.iat, 600, "short-lived: the configured lifetime");

    const jobs = await fetch(`${hub.url}/api/v1/rlinf.io/v1alpha1/jobs`, {
      headers: { authorization: `Bearer ${token}` },
    });
    t.equal(jobs.status, 200, "the session token opens the API");
    const items = ((await jobs.json()) as { items: { metadata: { name: string } }[] }).items.map(
      (i) => i.metadata.name,
    );
    t.ok(items.includes("ppo-cartpole-v1"));

    const wrong = await login(hub, { username: "carol", password: "Tr0ub4dor&3" });
    t.equal(wrong.status, 401);
    t.equal(wrong.body.kind, "Status");
    t.notOk("token" in wrong.body);
    t.equal(
      (await login(hub, { username: "nobody", password: "x" })).status,
      401,
      "an unknown user is refused alike",
    );
    t.equal(
      (await login(hub, { username: "alice", password: "" })).status,
      401,
      "a User without a hash cannot log in",
    );
    const tampered = `${token.slice(0, -2)}xx`;
    const refused = await fetch(`${hub.url}/api/v1/source`, {
      headers: { authorization: `Bearer ${tampered}` },
    });
    t.equal(refused.status, 401, "a tampered token is refused");
    const bad = await fetch(`${hub.url}/api/v1/auth/login`, { method: "POST", body: "username=carol" });
    t.equal(bad.status, 400, "only JSON bodies");
  },
);

t.test("a User removed from git loses its session at once", async (t) => {
  const git = await exampleRepository(t);
  const { hub } = await startDashboardHub(t, git);
  await synced(hub);
  const token = (await login(hub, { username: "carol", password: "correct horse" })).body.token as string;
  const get = () => fetch(`${hub.url}/api/v1/source`, { headers: { authorization: `Bearer ${token}` } });
  t.equal((await get()).status, 200);
  await git.commit({ "users/carol.yaml": null });
  await waitFor("carol's session refused", async () => (await get()).status === 401, onRealServers);
});

t.test("a session ends with its token: the stream closes and the API refuses it", async (t) => {
  const git = await exampleRepository(t);
  const { hub } = await startDashboardHub(t, git, { sessionTtlSeconds: 2 });
  await synced(hub);
  const token = (await login(hub, { username: "carol", password: "correct horse" })).body.token as string;
  const stream = await openEvents(hub, `?token=${token}`);
  t.teardown(() => stream.close());
  t.equal(stream.status, 200);
  await waitFor("the stream ended at expiry", () => stream.ended, onRealServers);
  const api = await fetch(`${hub.url}/api/v1/source`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(api.status, 401);
  const again = await openEvents(hub, `?token=${token}`);
  t.equal(again.status, 401, "and cannot reopen it");
  await again.close();
});

t.test("an open event stream closes when its User is removed from git", async (t) => {
  const git = await exampleRepository(t);
  const { hub } = await startDashboardHub(t, git, { sessionTtlSeconds: 3600 });
  await synced(hub);
  const token = (await login(hub, { username: "carol", password: "correct horse" })).body.token as string;
  const carol = await openEvents(hub, `?token=${token}`);
  const admin = await openEvents(hub, `?token=${hub.adminToken}`);
  t.teardown(() => Promise.all([carol.close(), admin.close()]));
  await waitFor("carol's snapshot", () => !!carol.find((m) => m.event === "snapshot"), onRealServers);
  await waitFor("the admin's snapshot", () => !!admin.find((m) => m.event === "snapshot"), onRealServers);
  await git.commit({ "users/carol.yaml": null });
  await waitFor("carol's stream ended by the hub", () => carol.ended, onRealServers);
  const again = await openEvents(hub, `?token=${token}`);
  t.equal(again.status, 401, "and cannot reopen it");
  await again.close();
  t.notOk(admin.ended, "other streams stay open");
});

t.test("event streams are capped per principal (429) and in all (503)", async (t) => {
  const git = await exampleRepository(t, {
    "users/dave.yaml": userYaml("dave", "viewer", await hashPassword("battery staple", FAST)),
  });
  const { hub } = await startDashboardHub(t, git, { streamLimits: { perPrincipal: 2, total: 3 } });
  await synced(hub);
  const carol = (await login(hub, { username: "carol", password: "correct horse" })).body.token as string;
  const dave = (await login(hub, { username: "dave", password: "battery staple" })).body.token as string;
  const first = await openEvents(hub, `?token=${carol}`);
  const second = await openEvents(hub, `?token=${carol}`);
  t.teardown(() => Promise.all([first.close(), second.close()]));
  t.equal(first.status, 200);
  t.equal(second.status, 200);
  const third = await fetch(`${hub.url}/api/v1/events?token=${carol}`);
  t.equal(third.status, 429, "a third stream of one principal");
  t.ok(Number(third.headers.get("retry-after")) > 0);
  t.match(((await third.json()) as { message: string }).message, /carol has 2 event streams open/);
  const daves = await openEvents(hub, `?token=${dave}`);
  t.teardown(() => daves.close());
  t.equal(daves.status, 200);
  const full = await fetch(`${hub.url}/api/v1/events?token=${dave}`);
  t.equal(full.status, 503, "the hub's total is reached");
  t.ok(Number(full.headers.get("retry-after")) > 0);
  await full.body?.cancel();
  await first.close();
  await waitFor(
    "a closed stream frees its place",
    async () => {
      const next = await openEvents(hub, `?token=${carol}`);
      if (next.status === 200) t.teardown(() => next.close());
      else await next.close();
      return next.status === 200;
    },
    onRealServers,
  );
});

t.test("a client that stops reading is dropped while the others keep receiving", async (t) => {
  const git = await exampleRepository(t);
  const { hub } = await startDashboardHub(t, git, { streamLimits: { perPrincipal: 1 } });
  await synced(hub);
  const carol = (await login(hub, { username: "carol", password: "correct horse" })).body.token as string;
  const session = (await login(hub, { adminToken: hub.adminToken })).body.token as string;
  // Each stream names the Job that changes below, as a page showing it would: its changes are sent.
  const readers = [
    await openEvents(hub, `?token=${carol}&jobs=ppo-cartpole-v1`),
    await openEvents(hub, `?token=${session}&jobs=ppo-cartpole-v1`),
  ];
  t.teardown(() => Promise.all(readers.map((r) => r.close())));

  // A raw socket that asks for the stream, and stops reading once the answer has begun.
  const paused = connect(Number(new URL(hub.url).port), "127.0.0.1");
  t.teardown(() => paused.destroy());
  await once(paused, "connect");
  paused.on("error", () => {});
  const answered = new Promise<string>((resolve) =>
    paused.once("data", (chunk: Buffer) => {
      paused.pause();
      resolve(chunk.toString("latin1"));
    }),
  );
  paused.write(
    `GET /api/v1/events?jobs=ppo-cartpole-v1 HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer ${hub.adminToken}\r\n\r\n`,
  );
  t.match(await answered, /^HTTP\/1\.1 200/);
  /** Whether the admin token's one allowed stream is free, i.e. the paused client is gone. */
  const adminSlotFree = async () => {
    const probe = await fetch(`${hub.url}/api/v1/events`, {
      headers: { authorization: `Bearer ${hub.adminToken}` },
    });
    await probe.body?.cancel();
    return probe.status === 200;
  };
  await waitFor("the paused client holds its stream", async () => !(await adminSlotFree()), onRealServers);

  // 256 KiB per change; well under the 1 MiB allowance plus what the kernel buffers, the paused
  // client is dropped, long before the 32 MiB it used to be allowed. Each change is waited for at
  // a reading client: the stream sends only the newest change of an object per batch, so changes
  // written faster than a batch would be one.
  const job = (await hub.store.get("Job", undefined, "ppo-cartpole-v1"))!;
  let dropped = false;
  for (let i = 0; i < 100 && !dropped; i++) {
    const written = await hub.store.updateStatus({
      ...(await hub.store.get("Job", undefined, job.metadata.name))!,
      status: { phase: "Running", run: 1, message: `${i} ${"x".repeat(256 * 1024)}` },
    });
    await waitFor(
      "the change at a reading client",
      () => !!readers[0]?.find((m) => m.event === "change" && m.id === written.metadata.resourceVersion),
      onRealServers,
    );
    if (i % 5 === 4) dropped = await adminSlotFree();
  }
  t.ok(dropped, "the paused client was dropped");
  const last = await hub.store.updateStatus({
    ...(await hub.store.get("Job", undefined, job.metadata.name))!,
    status: { phase: "Succeeded", run: 1 },
  });
  for (const reader of readers) {
    await waitFor(
      "the reading clients got every change",
      () => !!reader.find((m) => m.id === last.metadata.resourceVersion),
      onRealServers,
    );
    t.notOk(reader.ended);
  }
});

t.test("the admin token logs in, and the one-click URL holds a code, not it, in the fragment", async (t) => {
  const git = await exampleRepository(t);
  const { hub, dashboard } = await startDashboardHub(t, git);
  const ok = await login(hub, { adminToken: hub.adminToken });
  t.equal(ok.status, 200);
  t.equal(ok.body.role, "admin");
  t.equal((await login(hub, { adminToken: "not-the-token" })).status, 401);
  const url = new URL(dashboard.loginUrl(hub.url));
  t.equal(url.origin, hub.url);
  t.equal(url.pathname, "/");
  t.equal(url.search, "", "no code in the query, which servers and proxies log");
  t.match(url.hash, /^#\/login\?code=[\w-]{40,}$/);
  t.notOk(url.href.includes(hub.adminToken), "never the admin token");
});

t.test("failed logins are rate-limited with Retry-After", async (t) => {
  const git = await exampleRepository(t);
  const { hub } = await startDashboardHub(t, git, { loginLimit: { max: 3, windowMs: 60_000 } });
  await synced(hub);
  for (let i = 0; i < 3; i++)
    t.equal((await login(hub, { username: "carol", password: `guess-${i}` })).status, 401);
  const limited = await login(hub, { username: "carol", password: "correct horse" });
  t.equal(limited.status, 429, "even the right password waits once the limit is hit");
  t.ok(Number(limited.headers.get("retry-after")) > 0);
});

t.test("the event stream refuses a missing or wrong token", async (t) => {
  const git = await exampleRepository(t);
  const { hub } = await startDashboardHub(t, git);
  const none = await openEvents(hub, "");
  t.equal(none.status, 401);
  await none.close();
  const post = await fetch(`${hub.url}/api/v1/events?token=${hub.adminToken}`, { method: "POST" });
  t.equal(post.status, 405, "read-only");
  const wrong = await openEvents(hub, "?token=wrong");
  t.equal(wrong.status, 401);
  await wrong.close();
});

t.test(
  "the event stream sends a redacted snapshot, then a git push and a status update live; Last-Event-ID resumes",
  async (t) => {
    const git = await exampleRepository(t);
    const { hub } = await startDashboardHub(t, git, {
      repoUrl: "https://user:secret@github.com/lab/manifests.git",
    });
    await synced(hub);
    const token = (await login(hub, { username: "carol", password: "correct horse" })).body.token as string;
    await waitFor(
      "jobs in the store",
      async () => (await hub.store.list("Job")).items.length >= 2,
      onRealServers,
    );

    // The stream names the Jobs its page shows: theirs are sent (and only theirs, stream-jobs.test.ts).
    const shown = "&jobs=ppo-cartpole-v1,cartpole-local";
    const stream = await openEvents(hub, `?token=${token}${shown}`);
    t.teardown(() => stream.close());
    await waitFor("snapshot", () => !!stream.find((m) => m.event === "snapshot"), onRealServers);
    const snapshot = stream.find((m) => m.event === "snapshot")!;
    const body = JSON.parse(snapshot.data) as {
      objects: { kind: string; metadata: { name: string }; spec?: Record<string, unknown> }[];
      source: { state: string };
      config: { repoWeb: { base: string; style: string } };
    };
    t.ok(body.objects.some((o) => o.kind === "Job" && o.metadata.name === "ppo-cartpole-v1"));
    t.ok(body.objects.some((o) => o.kind === "Workflow" && o.metadata.name === "collect-train-deploy"));
    t.notOk(
      body.objects.some((o) => o.kind === "User"),
      "no Users, so no password hashes",
    );
    t.equal(body.source.state, "Synced");
    t.same(
      body.config.repoWeb,
      { base: "https://github.com/lab/manifests", style: "github" },
      "no credentials",
    );
    t.ok(snapshot.id, "the snapshot names where to resume");

    // A status update from "the agent": arrives as MODIFIED with its resourceVersion as id.
    const job = (await hub.store.get("Job", undefined, "ppo-cartpole-v1"))!;
    const updated = await hub.store.updateStatus({ ...job, status: { phase: "Running", run: 1 } });
    await waitFor(
      "status change",
      () => !!stream.find((m) => m.event === "change" && m.id === updated.metadata.resourceVersion),
      onRealServers,
    );
    const change = JSON.parse(stream.find((m) => m.id === updated.metadata.resourceVersion)!.data);
    t.equal(change.type, "MODIFIED");
    t.equal(change.object.status.phase, "Running");

    // A DomainPeer's key never leaves the hub.
    const peer = await hub.store.create({
      apiVersion: "rlinf.io/v1alpha1",
      kind: "DomainPeer",
      metadata: { name: "robot-lab", namespace: "agent-beijing", labels: { "rlark.io/domain": "robot-lab" } },
      spec: { cert: "CERT", key: "PRIVATE KEY", prefixLen: 24, pods: [] },
    });
    await waitFor(
      "peer event",
      () => !!stream.find((m) => m.id === peer.metadata.resourceVersion),
      onRealServers,
    );
    const peerEvent = stream.find((m) => m.id === peer.metadata.resourceVersion)!;
    t.notMatch(peerEvent.data, "PRIVATE KEY");

    // A git push: a new Domain arrives as ADDED.
    await git.commit({
      "domains/extra.yaml":
        "apiVersion: rlinf.io/v1alpha1\nkind: Domain\nmetadata:\n  name: extra\nspec:\n  cidr: 10.77.0.0/24\n",
    });
    await waitFor(
      "pushed domain",
      () => !!stream.find((m) => m.event === "change" && m.data.includes('"name":"extra"')),
      onRealServers,
    );
    await waitFor(
      "source status pushed after the new revision",
      () => stream.messages.filter((m) => m.event === "source").length > 0,
      onRealServers,
    );
    await stream.close();

    // Missed while away: resumes with only these, not a new snapshot; the named Jobs as they are now.
    const lastId = stream.messages.filter((m) => m.id).at(-1)!.id!;
    const missed = await hub.store.updateStatus({
      ...(await hub.store.get("Job", undefined, "cartpole-local"))!,
      status: { phase: "Succeeded", run: 1 },
    });
    const resumed = await openEvents(hub, `?token=${token}${shown}`, { "last-event-id": lastId });
    t.teardown(() => resumed.close());
    await waitFor(
      "missed change replayed",
      () =>
        !!resumed.find(
          (m) =>
            m.event === "selection" &&
            (
              JSON.parse(m.data) as { objects: { metadata: { name: string; resourceVersion: string } }[] }
            ).objects.some(
              (o) =>
                o.metadata.name === "cartpole-local" &&
                o.metadata.resourceVersion === missed.metadata.resourceVersion,
            ),
        ),
      onRealServers,
    );
    t.notOk(
      resumed.find((m) => m.event === "snapshot"),
      "no snapshot on resume",
    );
    t.ok(resumed.find((m) => m.event === "resume"));
    t.notOk(
      resumed.find((m) => m.data.includes('"name":"extra"') && m.event === "change"),
      "nothing seen before is sent again",
    );

    const unknown = await openEvents(hub, `?token=${token}&lastEventId=999999999`);
    t.teardown(() => unknown.close());
    await waitFor(
      "an id it cannot resume from gets a snapshot",
      () => !!unknown.find((m) => m.event === "snapshot"),
      onRealServers,
    );
  },
);

t.test(
  "the page is not cached, hashed assets are cached for good, and the code ships without types",
  async (t) => {
    const git = await exampleRepository(t);
    const { hub, dataDir } = await startDashboardHub(t, git);
    const index = await fetch(`${hub.url}/`);
    t.equal(index.status, 200, "the page itself needs no token: the data does");
    t.equal(index.headers.get("cache-control"), "no-cache");
    t.match(index.headers.get("content-security-policy"), "default-src 'self'");
    t.equal(index.headers.get("x-content-type-options"), "nosniff");
    const html = await index.text();
    const script = /src="(\/assets\/[0-9a-f]{16}\/main\.mts)"/.exec(html)?.[1];
    t.ok(script, "the entry point is under a content hash");
    const js = await fetch(`${hub.url}${script}`);
    t.equal(js.status, 200);
    t.equal(js.headers.get("cache-control"), "public, max-age=31536000, immutable");
    t.match(js.headers.get("content-type"), "text/javascript");
    const code = await js.text();
    t.notMatch(code, /import type/, "types are stripped");
    t.notMatch(code, /https?:\/\/(?!localhost)[a-z]+\.[a-z]+\/.*\.js/, "nothing loaded from a CDN");
    const css = /href="(\/assets\/[0-9a-f]{16}\/style\.css)"/.exec(html)?.[1];
    t.equal((await fetch(`${hub.url}${css}`)).status, 200);
    t.equal((await fetch(`${hub.url}/assets/0000000000000000/main.mts`)).status, 404);
    // A browser asks for an icon on every page: never a 401 (a console error each time).
    const icon = /<link rel="icon" href="(\/assets\/[0-9a-f]{16}\/favicon\.svg)"/.exec(html)?.[1];
    t.ok(icon, "the page names its icon");
    const linked = await fetch(`${hub.url}${icon}`);
    t.equal(linked.status, 200);
    t.match(linked.headers.get("content-type"), "image/svg+xml");
    const legacy = await fetch(`${hub.url}/favicon.ico`);
    t.equal(legacy.status, 200, "/favicon.ico needs no token either");
    t.match(legacy.headers.get("content-type"), "image/svg+xml");
    t.match(await legacy.text(), /^<svg /);
    const secret = await stat(path.join(dataDir, "dashboard-jwt-secret"));
    t.equal(secret.mode & 0o777, 0o600, "the signing secret is private to the hub's user");
  },
);
