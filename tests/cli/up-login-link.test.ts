// issue 31 item 13, as a user meets it: `rlark up` prints a login link that works once and never
// prints the permanent admin token.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { startRlarkUp } from "../helpers/long-running.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

t.test("rlark up's login link logs in once and its output holds no admin token", async (t) => {
  const root = await mkdtemp(path.join(tmpdir(), "rlark-up-link-"));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const dataDir = path.join(root, ".rlark");
  const up = startRlarkUp(t, dataDir);
  const line = await waitFor(
    "rlark up to print its login link",
    () => /dashboard \(([^)]*)\): (\S+)/.exec(up.stdout()) ?? undefined,
    {
      ...onRealServers,
      attempts: 1200,
    },
  );
  await waitFor(
    "rlark up to finish its banner",
    () => up.stdout().includes("stop with Ctrl-C"),
    onRealServers,
  );
  t.match(line[1], /once/, "the line says the link works once");
  const token = (await readFile(path.join(dataDir, "admin-token"), "utf8")).trim();
  t.notOk(up.stdout().includes(token), "stdout does not contain the admin token");
  const link = new URL(line[2] as string);
  const code = new URLSearchParams(link.hash.replace(/^#\/login\?/, "")).get("code");
  t.ok(code, "the link carries a code");
  const exchange = () =>
    fetch(`${link.origin}/api/v1/auth/login-link`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ code }),
    });
  const first = await exchange();
  t.equal(first.status, 200, "the link logs in");
  const session = ((await first.json()) as { token: string }).token;
  const jobs = await fetch(`${link.origin}/api/v1/rlinf.io/v1alpha1/jobs`, {
    headers: { authorization: `Bearer ${session}` },
  });
  t.equal(jobs.status, 200, "as someone the API admits");
  t.equal((await exchange()).status, 401, "a second use is refused");
  up.kill("SIGINT");
  t.equal(await up.exited, 0);
});
