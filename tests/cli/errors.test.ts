// How the real `rlark` process fails: one line naming what is wrong, exit 2 for usage and I/O
// errors and 1 for the rest; the usage text only when the command line itself is wrong.
import { mkdtemp } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { type RlarkOptions, repoRoot, rlark as run } from "../helpers/rlark-cli.ts";

// No token from the environment this runs in: the errors below are about its absence.
const rlark = (args: string[], options: RlarkOptions = {}) =>
  run(args, { ...options, env: { RLARK_TOKEN: "", ...options.env } });

const lines = (text: string) => text.split("\n").filter(Boolean);

t.test("plan of a path that does not exist: exit 2 with one clear line and no plan", async (t) => {
  const run = await rlark(["plan", "/nonexistent"], { cwd: tmpdir() });
  t.equal(run.code, 2);
  t.equal(run.stdout, "", "no plan is printed");
  t.same(lines(run.stderr), ["rlark plan: /nonexistent: no such file or directory"]);
});

t.test("validate prints a missing path as the user typed it", async (t) => {
  const cwd = await mkdtemp(path.join(tmpdir(), "rlark-cli-"));
  const run = await rlark(["validate", "/nonexistent/foo", "missing.yaml"], { cwd });
  t.equal(run.code, 2);
  t.same(lines(run.stderr), [
    "rlark validate: /nonexistent/foo: no such file or directory",
    "rlark validate: missing.yaml: no such file or directory",
  ]);
  t.notMatch(run.stderr, /\.\.\//);
});

t.test("status without a token says where a token comes from, in a whole sentence", async (t) => {
  const dataDir = await mkdtemp(path.join(tmpdir(), "rlark-cli-"));
  const run = await rlark(["status", "--data-dir", dataDir]);
  t.equal(run.code, 2);
  t.same(lines(run.stderr), [
    `rlark status: no token: pass --token or --token-file, set RLARK_TOKEN, or point --data-dir at the data directory of the hub (it holds admin-token; found none at ${path.join(dataDir, "admin-token")})`,
  ]);
});

t.test("a runtime error prints one line, not the usage", async (t) => {
  // A port that refuses: bind one, then close it.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const run = await rlark(["status", "--hub", `http://127.0.0.1:${port}`, "--token", "x"]);
  t.equal(run.code, 2, "an unreachable hub is an I/O error");
  t.equal(lines(run.stderr).length, 1, run.stderr);
  t.match(run.stderr, new RegExp(`^rlark status: cannot reach http://127\\.0\\.0\\.1:${port}/`));
  t.notMatch(run.stderr, /Usage:/);
});

t.test("a bad flag value is a usage error: exit 2, one line", async (t) => {
  const dataDir = path.join(await mkdtemp(path.join(tmpdir(), "rlark-cli-")), "data");
  const up = await rlark(["up", "--http", "notaport", "--data-dir", dataDir]);
  t.equal(up.code, 2);
  t.same(lines(up.stderr), ['rlark up: --http: expected host:port, got "notaport"']);
  const ssh = await rlark(["hub", "--repo", dataDir, "--ssh", "host:99999", "--data-dir", dataDir]);
  t.equal(ssh.code, 2);
  t.match(ssh.stderr, /^rlark hub: --ssh: port 99999 is not in 0-65535\n$/);
  const rate = await rlark(["hub", "--repo", dataDir, "--data-dir", dataDir, "--access-rate", "12parsecs"]);
  t.equal(rate.code, 2);
  t.match(rate.stderr, /argument '12parsecs' is invalid\. "12parsecs" is not a size \(examples: 0, 512KiB/);
  const slow = await rlark(["hub", "--repo", dataDir, "--data-dir", dataDir, "--access-rate", "100"]);
  t.equal(slow.code, 2);
  t.match(slow.stderr, /argument '100' is invalid\. expected 0 \(no limit\) or at least 1KiB/);
  const sessions = await rlark(["up", "--data-dir", dataDir, "--access-max-sessions", "0"]);
  t.equal(sessions.code, 2);
  t.match(sessions.stderr, /argument '0' is invalid\. expected a whole number above 0/);
  const startups = await rlark(["up", "--data-dir", dataDir, "--ssh-max-startups", "50:30:10"]);
  t.equal(startups.code, 2);
  t.match(
    startups.stderr,
    /argument '50:30:10' is invalid\. max startups "50:30:10": full must be at least start/,
  );
  const grace = await rlark([
    "hub",
    "--repo",
    dataDir,
    "--data-dir",
    dataDir,
    "--ssh-login-grace-time",
    "0s",
  ]);
  t.equal(grace.code, 2);
  t.match(grace.stderr, /argument '0s' is invalid\. expected a duration above 0/);
  const { existsSync } = await import("node:fs");
  t.notOk(existsSync(dataDir), "nothing is created before the flags are checked");
});

t.test("user hash-password without a password or with a bad cost is a usage error", async (t) => {
  const empty = await rlark(["user", "hash-password"]);
  t.equal(empty.code, 2);
  t.same(lines(empty.stderr), ["rlark user hash-password: no password on standard input"]);
  const cost = await rlark(["user", "hash-password", "--cost", "3"], { input: "pw\n" });
  t.equal(cost.code, 2);
  t.same(lines(cost.stderr), ["rlark user hash-password: --cost must be an integer from 14 to 20"]);
});

t.test("a reader that stops early (rlark crds | head): exit 0, no stack", async (t) => {
  const { spawnSync } = await import("node:child_process");
  // A real shell pipe, as a user types it: head exits after 100 bytes of the ~100 KB crds writes.
  const main = path.join(repoRoot, "operators/cli/main.ts");
  const run = spawnSync(
    "bash",
    ["-c", 'set -o pipefail; "$0" "$1" crds | head -c 100 >/dev/null', process.execPath, main],
    { encoding: "utf8" },
  );
  t.equal(run.stderr, "", "no EPIPE stack");
  t.equal(run.status, 0);
});
