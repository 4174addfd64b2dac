import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import t, { type Test } from "tap";
import { ArtifactCache, ArtifactError } from "../../../../operators/agent/runtimes/process/artifact-cache.ts";
import { tempDir } from "./helpers.ts";

const body = "#!/bin/sh\necho hello\n";
const digest = createHash("sha256").update(body).digest("hex");

async function serve(t: Test): Promise<{ base: string; hits: () => number }> {
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    if (req.url === "/tool") res.end(body);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: () => hits };
}

t.test("an artifact with the right digest is cached once, executable", async (t) => {
  const { base, hits } = await serve(t);
  const cache = new ArtifactCache({ dir: tempDir(t) });
  const [a, b] = await Promise.all([
    cache.get({ url: `${base}/tool`, sha256: digest }),
    cache.get({ url: `${base}/tool`, sha256: digest }),
  ]);
  t.equal(a, b);
  t.match(a, new RegExp(`/${digest}/tool$`));
  t.equal(readFileSync(a, "utf8"), body);
  t.ok(statSync(a).mode & 0o100, "owner may execute it");
  await cache.get({ url: `${base}/tool`, sha256: digest });
  t.equal(hits(), 1, "downloaded once for concurrent and later requests");
});

t.test("a digest mismatch fails and leaves nothing in the cache", async (t) => {
  const { base } = await serve(t);
  const dir = tempDir(t);
  const cache = new ArtifactCache({ dir });
  const wrong = "0".repeat(64);
  const error = await cache.get({ url: `${base}/tool`, sha256: wrong }).catch((e: unknown) => e);
  t.ok(error instanceof ArtifactError);
  t.equal((error as ArtifactError).reason, "ArtifactChecksumMismatch");
  t.notOk(existsSync(join(dir, wrong, "tool")));
  t.same(
    readdirSync(dir).filter((f) => f.startsWith(".partial")),
    [],
    "no partial download left",
  );
});

t.test("an HTTP error is a download failure, not a mismatch", async (t) => {
  const { base } = await serve(t);
  const cache = new ArtifactCache({ dir: tempDir(t) });
  const error = await cache.get({ url: `${base}/missing`, sha256: digest }).catch((e: unknown) => e);
  t.equal((error as ArtifactError).reason, "ArtifactDownloadFailed");
  t.match((error as Error).message, /404/);
});

t.test("file:// URLs are read from disk and verified the same way", async (t) => {
  const dir = tempDir(t);
  const source = join(dir, "local-tool");
  writeFileSync(source, body);
  const cache = new ArtifactCache({ dir: join(dir, "cache") });
  const path = await cache.get({ url: pathToFileURL(source).href, sha256: digest });
  t.equal(readFileSync(path, "utf8"), body);
  const error = await cache
    .get({ url: pathToFileURL(source).href, sha256: "1".repeat(64) })
    .catch((e: unknown) => e);
  t.equal((error as ArtifactError).reason, "ArtifactChecksumMismatch");
});

t.test("a cached artifact changed on disk is checked before use and fetched afresh", async (t) => {
  const { base, hits } = await serve(t);
  const dir = tempDir(t);
  const path = await new ArtifactCache({ dir }).get({ url: `${base}/tool`, sha256: digest });
  writeFileSync(path, "#!/bin/sh\necho tampered\n");
  // A new agent (a new cache object) must not trust what an earlier one left behind.
  const again = await new ArtifactCache({ dir }).get({ url: `${base}/tool`, sha256: digest });
  t.equal(again, path);
  t.equal(readFileSync(again, "utf8"), body);
  t.equal(hits(), 2);
});
