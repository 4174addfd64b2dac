// The hub end to end on real git: a bare repository the test pushes to, served over file:// and
// `git daemon`, the real SQLite store and the real HTTP API.
import { createHash, createHmac } from "node:crypto";
import { chmod, mkdir, mkdtemp, readdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { statusBranchPath } from "../../operators/feedback/index.ts";
import type { Hub } from "../../operators/hub/hub.ts";
import { createGitServer } from "../helpers/git-server.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rawJobYaml } from "../helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const domain = (name: string, cidr: string) =>
  `apiVersion: rlinf.io/v1alpha1\nkind: Domain\nmetadata:\n  name: ${name}\nspec:\n  cidr: ${cidr}\n`;
const user = (name: string) =>
  `apiVersion: rlinf.io/v1alpha1\nkind: User\nmetadata:\n  name: ${name}\nspec:\n  roles: [viewer]\n  passwordHash: "$scrypt$ln=14,r=8,p=1$c2FsdA$aGFzaA"\n`;

async function api(hub: Hub, route: string, token: string | undefined = hub.adminToken) {
  const response = await fetch(`${hub.url}${route}`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function names(hub: Hub, plural: string): Promise<string[]> {
  const { body } = await api(hub, `/api/v1/rlinf.io/v1alpha1/${plural}`);
  return (body.items as { metadata: { name: string } }[]).map((i) => i.metadata.name).sort();
}

// Polls git often and writes status soon: the tests wait on both.
const quick = { intervalMs: 100, statusDebounceMs: 50 };

t.test(
  "pushed revisions appear in the API; an invalid one is refused whole and the last good stays",
  async (t) => {
    const { git, hub } = await startHubOnGit(t, {
      ...quick,
      files: { "domains/a.yaml": domain("a", "10.0.1.0/24") },
    });
    await waitFor("domain a", async () => (await names(hub, "domains")).join() === "a", onRealServers);

    const good = await git.commit({ "domains/b.yaml": domain("b", "10.0.2.0/24") });
    await waitFor("domain b", async () => (await names(hub, "domains")).join() === "a,b", onRealServers);
    const { body: b } = await api(hub, "/api/v1/rlinf.io/v1alpha1/domains/b");
    const annotations = (b.metadata as { annotations: Record<string, string> }).annotations;
    t.equal(annotations["rlark.io/source-file"], "domains/b.yaml:1", "objects carry file:line");
    t.equal(annotations["rlark.io/source-revision"], good);

    // One good file and one bad file in one commit: neither is applied.
    const bad = await git.commit({
      "domains/c.yaml": domain("c", "10.0.3.0/24"),
      "domains/overlap.yaml": domain("overlap", "10.0.1.128/25"),
    });
    await waitFor(
      "bad revision refused",
      async () => {
        const { body } = await api(hub, "/api/v1/source");
        return body.lastAttemptedRevision === bad && body.state === "Invalid";
      },
      onRealServers,
    );
    const { body: source } = await api(hub, "/api/v1/source");
    t.equal(source.state, "Invalid");
    t.equal(source.lastAppliedRevision, good, "the last good revision stays applied");
    t.match(source.errors, [
      { file: "domains/overlap.yaml", line: 6, column: 9, rule: "cross/cidr-overlap" },
    ]);
    t.same(await names(hub, "domains"), ["a", "b"], "nothing of the bad revision was applied");

    await git.commit({ "domains/overlap.yaml": null, "domains/a.yaml": null });
    await waitFor(
      "fixed revision applied",
      async () => (await names(hub, "domains")).join() === "b,c",
      onRealServers,
    );
    // The objects are stored in the revision's transaction; the source's state follows it.
    await waitFor(
      "source Synced",
      async () => (await api(hub, "/api/v1/source")).body.state === "Synced",
      onRealServers,
    );
  },
);

t.test("a force-push that rewrites history is followed, over git daemon", async (t) => {
  const git = await createGitServer();
  t.teardown(() => git.close());
  await git.commit({ "d.yaml": domain("first", "10.1.0.0/24") });
  await git.startDaemon();
  const { hub } = await startHubOnGit(t, { ...quick, git, repo: git.daemonUrl });
  await waitFor("first", async () => (await names(hub, "domains")).join() === "first", onRealServers);
  await git.git("checkout", "--orphan", "rewritten");
  await git.git("rm", "-rfq", ".");
  await git.commit({ "d.yaml": domain("second", "10.2.0.0/24") }, "rewrite");
  await git.git("push", "--force", "origin", `rewritten:${git.branch}`);
  await waitFor(
    "rewritten history applied",
    async () => (await names(hub, "domains")).join() === "second",
    onRealServers,
  );
});

t.test("the API needs a token, is read-only, and never returns secrets", async (t) => {
  const { hub } = await startHubOnGit(t, { ...quick, files: { "u.yaml": user("carol") } });
  await waitFor("user", async () => (await names(hub, "users")).join() === "carol", onRealServers);
  t.equal((await api(hub, "/api/v1/rlinf.io/v1alpha1/users", "")).status, 401);
  t.equal((await api(hub, "/api/v1/rlinf.io/v1alpha1/users", "wrong-token")).status, 401);
  t.equal((await fetch(`${hub.url}/metrics`)).status, 401, "metrics need the token too");
  const { body } = await api(hub, "/api/v1/rlinf.io/v1alpha1/users/carol");
  t.same(body.spec, { roles: ["viewer"] }, "passwordHash is not served");
  const post = await fetch(`${hub.url}/api/v1/rlinf.io/v1alpha1/users`, {
    method: "POST",
    headers: { authorization: `Bearer ${hub.adminToken}` },
  });
  t.equal(post.status, 405);
  t.equal((await api(hub, "/api/v1/rlinf.io/v1alpha1/nope")).status, 404);
  const health = await fetch(`${hub.url}/healthz`);
  t.equal(health.status, 200, "health needs no token");
  const metrics = await fetch(`${hub.url}/metrics`, {
    headers: { authorization: `Bearer ${hub.adminToken}` },
  });
  t.match(await metrics.text(), /rlark_store_objects\{kind="User"\} 1/);
});

t.test("a signed push webhook makes the hub fetch at once; a forged one is refused", async (t) => {
  const secretFile = path.join(await mkdtemp(path.join(tmpdir(), "rlark-secret-")), "secret");
  await writeFile(secretFile, "s3cret\n", { mode: 0o600 });
  const { git, hub } = await startHubOnGit(t, {
    ...quick,
    // An interval of an hour: only the webhook can explain a fetch.
    intervalMs: 3_600_000,
    webhookSecretFile: secretFile,
    files: { "d.yaml": domain("one", "10.3.0.0/24") },
  });
  await waitFor("initial sync", async () => (await names(hub, "domains")).join() === "one", onRealServers);
  await git.commit({ "e.yaml": domain("two", "10.4.0.0/24") });
  const payload = JSON.stringify({
    ref: `refs/heads/${git.branch}`,
    repository: { clone_url: git.fileUrl, full_name: "test/manifests" },
  });
  const send = (signature: string) =>
    fetch(`${hub.url}/hooks/git`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "push",
        "x-hub-signature-256": signature,
      },
      body: payload,
    });
  t.equal((await send("sha256=0000")).status, 401, "a forged signature is refused");
  const signature = `sha256=${createHmac("sha256", "s3cret").update(payload).digest("hex")}`;
  t.equal((await send(signature)).status, 202);
  await waitFor(
    "webhook-triggered fetch",
    async () => (await names(hub, "domains")).join() === "one,two",
    onRealServers,
  );
});

t.test("status is committed to the status branch, never to the tracked one", async (t) => {
  const {
    git,
    hub,
    revision: tracked,
  } = await startHubOnGit(t, {
    ...quick,
    statusBranch: "rlark/status",
    files: {
      "c.yaml":
        "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: lab\nspec:\n  runtime: process\n",
    },
  });
  await waitFor("cluster", async () => (await names(hub, "clusters")).join() === "lab", onRealServers);
  const cluster = await hub.store.get("Cluster", undefined, "lab");
  if (!cluster) throw new Error("cluster missing");
  await hub.store.updateStatus({ ...cluster, status: { phase: "Online" } });
  await waitFor(
    "status branch pushed",
    async () => (await git.gitBare("branch", "--list", "rlark/status")).includes("rlark/status"),
    onRealServers,
  );
  const content = await git.gitBare("show", `rlark/status:${statusBranchPath("status/cluster/lab.yaml")}`);
  t.match(content, /phase: Online/);
  t.match(content, /source: c\.yaml:1/);
  t.equal((await git.gitBare("rev-parse", git.branch)).trim(), tracked, "the tracked branch is untouched");
  const author = await git.gitBare("log", "-1", "--format=%an", "rlark/status");
  t.equal(author.trim(), "rlark-bot");
});

const rawJob = (url: string, sha256: string) =>
  rawJobYaml({ name: "raw", command: ["./tool.sh"], artifact: { url, sha256 } });

const sha256 = (bytes: string | Buffer) => createHash("sha256").update(bytes).digest("hex");

t.test(
  "a revision whose repository artifact does not match its SHA-256 is refused at the field, without the file's digest",
  async (t) => {
    const {
      git,
      hub,
      revision: bad,
    } = await startHubOnGit(t, {
      ...quick,
      files: { "tool.sh": "hello\n", "job.yaml": rawJob("tool.sh", "0".repeat(64)) },
    });
    await waitFor(
      "tried",
      async () => (await api(hub, "/api/v1/source")).body.lastAttemptedRevision === bad,
      onRealServers,
    );
    await waitFor(
      "refused",
      async () => (await api(hub, "/api/v1/source")).body.state === "Invalid",
      onRealServers,
    );
    const { errors } = (await api(hub, "/api/v1/source")).body;
    t.match(errors, [
      {
        file: "job.yaml",
        line: 12,
        column: 16,
        path: "/spec/tasks/0/raw/artifact/url",
        rule: "source/artifact",
        message: /"tool.sh" does not match the declared sha256/,
      },
    ]);
    t.notMatch(JSON.stringify(errors), sha256("hello\n"), "the digest of what is there is not shown");
    await git.commit({ "job.yaml": rawJob("tool.sh", sha256("hello\n")) });
    await waitFor(
      "fixed revision applied",
      async () => (await names(hub, "jobs")).join() === "raw",
      onRealServers,
    );
  },
);

t.test("malformed percent-encoding in an API path is 400; every response says nosniff", async (t) => {
  const { hub } = await startHubOnGit(t, { ...quick, files: { "u.yaml": user("carol") } });
  for (const route of [
    "/api/v1/rlinf.io/v1alpha1/users/%E0%A4%A",
    "/api/v1/rlinf.io/v1alpha1/%zz",
    "/api/v1/rlinf.io/v1alpha1/pods/%/log?namespace=agent-a",
  ]) {
    const { status, body } = await api(hub, route);
    t.equal(status, 400, route);
    t.match(body, { kind: "Status", reason: "BadRequest", message: /malformed percent-encoding/ }, route);
  }
  for (const [route, token] of [
    ["/healthz", ""],
    ["/readyz", ""],
    ["/api/v1/source", ""],
    ["/api/v1/source", hub.adminToken],
    ["/api/v1/rlinf.io/v1alpha1/users", hub.adminToken],
    ["/api/v1/rlinf.io/v1alpha1/users/%zz", hub.adminToken],
    ["/metrics", hub.adminToken],
    ["/hooks/git", ""],
    ["/nowhere", hub.adminToken],
  ] as const) {
    const response = await fetch(`${hub.url}${route}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    await response.arrayBuffer();
    t.equal(response.headers.get("x-content-type-options"), "nosniff", route);
  }
});

t.test(
  "an artifact reached through a symlinked folder into the hub's data dir is refused, its digest never shown, nothing copied",
  async (t) => {
    // As `rlark up` left it before: a data dir readable by everyone.
    const dataDir = await mkdtemp(path.join(tmpdir(), "rlark-hub-"));
    await chmod(dataDir, 0o755);
    const {
      git,
      hub,
      revision: first,
    } = await startHubOnGit(t, { ...quick, dataDir, files: { "d.yaml": domain("a", "10.9.0.0/24") } });
    await waitFor(
      "first",
      async () => (await api(hub, "/api/v1/source")).body.lastAppliedRevision === first,
      onRealServers,
    );
    t.equal((await stat(dataDir)).mode & 0o777, 0o700, "the hub makes its data dir private");
    const caKey = await readFile(path.join(dataDir, "pki", "ca.key"));

    // The attack: node_modules/ is never read for manifests, so the link went unnoticed.
    await mkdir(path.join(git.work, "node_modules"));
    await symlink(path.join(dataDir, "pki"), path.join(git.work, "node_modules", "p"));
    await symlink(path.join(dataDir, "pki", "ca.key"), path.join(git.work, "node_modules", "k"));
    const refused = async (url: string, sha: string) => {
      const revision = await git.commit({ "job.yaml": rawJob(url, sha) });
      await waitFor(
        `${url} refused`,
        async () => {
          const { body } = await api(hub, "/api/v1/source");
          // The attempted revision is recorded before it is checked: wait for its own errors.
          return (
            body.lastAttemptedRevision === revision &&
            body.state === "Invalid" &&
            JSON.stringify(body.errors).includes(url)
          );
        },
        onRealServers,
      );
      return (await api(hub, "/api/v1/source")).body;
    };
    for (const [url, message] of [
      ["node_modules/p/ca.key", /goes through the symlink "node_modules\/p"/],
      ["node_modules/k", /is a symlink/],
      ["node_modules/p/absent", /goes through the symlink "node_modules\/p"/],
    ] as const) {
      // With a made-up digest the refusal must not print the real one; with the real one (learnt
      // elsewhere) the key must still not be copied.
      for (const sha of ["0".repeat(64), sha256(caKey)]) {
        const source = await refused(url, sha);
        t.match(source.errors, [{ file: "job.yaml", rule: "source/artifact", message }], url);
        const text = JSON.stringify(source);
        if (sha !== sha256(caKey)) t.notMatch(text, sha256(caKey), "the key's digest is not shown");
        t.notMatch(text, dataDir, "no hub path is shown");
      }
    }
    const stored = await readdir(path.join(dataDir, "artifacts")).catch(() => []);
    t.same(stored, [], "nothing was copied");
    t.same(await names(hub, "jobs"), [], "no Job was applied");

    // A real artifact is stored, private folder, file not world-writable nor executable.
    const applied = await git.commit({
      "tool.sh": "#!/bin/sh\necho hi\n",
      "job.yaml": rawJob("tool.sh", sha256("#!/bin/sh\necho hi\n")),
    });
    await waitFor(
      "applied",
      async () => (await api(hub, "/api/v1/source")).body.lastAppliedRevision === applied,
      onRealServers,
    );
    const digest = sha256("#!/bin/sh\necho hi\n");
    t.equal((await stat(path.join(dataDir, "artifacts", digest))).mode & 0o777, 0o700);
    t.equal((await stat(path.join(dataDir, "artifacts", digest, "tool.sh"))).mode & 0o777, 0o644);
  },
);
