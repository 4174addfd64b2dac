// `rlark status` against a real hub whose repository holds hostile text.
import { execFile } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { startHub } from "../../operators/hub/hub.ts";
import { silentLogger } from "../../operators/lib/controller/index.ts";
import { createGitServer, waitFor } from "../helpers/git-server.ts";

const root = path.resolve(import.meta.dirname, "../..");
const cli = path.join(root, "operators/cli/main.ts");

t.test("escape sequences from the repository are shown escaped, in text and in json", async (t) => {
  const git = await createGitServer();
  t.teardown(() => git.close());
  // A key that would retitle the terminal and clear it, and a C1 CSI: the refusal names the key.
  const revision = await git.commit({
    "d.yaml":
      'apiVersion: rlinf.io/v1alpha1\nkind: Domain\nmetadata:\n  name: evil\nspec:\n  cidr: 10.0.0.0/24\n  "\\e]0;pwned\\a\\e[2J\\x9b31m": 1\n',
  });
  const hub = await startHub({
    dataDir: await mkdtemp(path.join(tmpdir(), "rlark-status-")),
    http: "127.0.0.1:0",
    ssh: "127.0.0.1:0",
    repo: git.fileUrl,
    branch: git.branch,
    intervalMs: 100,
    logger: silentLogger,
  });
  t.teardown(() => hub.stop());
  await waitFor(async () => {
    const response = await fetch(`${hub.url}/api/v1/source`, {
      headers: { authorization: `Bearer ${hub.adminToken}` },
    });
    const source = (await response.json()) as { lastAttemptedRevision?: string; errors?: unknown[] };
    return source.lastAttemptedRevision === revision && (source.errors?.length ?? 0) > 0;
  }, "revision refused");
  // Not spawnSync: the hub answering the CLI runs in this process.
  const status = (...args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [cli, "status", "--hub", hub.url, "--token", hub.adminToken, ...args],
        { encoding: "utf8", timeout: 60_000 },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      );
    });
  // biome-ignore lint/suspicious/noControlCharactersInRegex: what must not be printed
  const raw = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
  const text = await status();
  t.equal(text.code, 0, text.stderr);
  t.notMatch(text.stdout, raw, "no raw control character");
  t.match(text.stdout, "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m", "the key, escaped");
  const json = await status("--output", "json");
  t.notMatch(json.stdout.trimEnd(), raw, "json: no raw control character");
  const parsed = JSON.parse(json.stdout) as { source: { errors: { path: string }[] } };
  t.equal(
    parsed.source.errors[0]?.path,
    "/spec/\u001b]0;pwned\u0007\u001b[2J\u009b31m",
    "json: the exact text",
  );
});
