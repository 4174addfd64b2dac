// A file that does not match its declared digest is never hashed back to whoever reads the
// Task's status: the digest of any file the URL can reach would otherwise leak.
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import t from "tap";
import {
  ArtifactCache,
  type ArtifactError,
} from "../../../../operators/agent/runtimes/process/artifact-cache.ts";
import { desiredPods } from "../../../../operators/agent/runtimes/process/spec.ts";
import { rawTask, tempDir } from "./helpers.ts";

t.test("a digest mismatch says so without printing the file's digest", async (t) => {
  const dir = tempDir(t);
  const source = join(dir, "secret-tool");
  const body = "not what the Task names\n";
  writeFileSync(source, body);
  const actual = createHash("sha256").update(body).digest("hex");
  const cache = new ArtifactCache({ dir: join(dir, "cache") });
  const error = (await cache
    .get({ url: pathToFileURL(source).href, sha256: "1".repeat(64) })
    .catch((e: unknown) => e)) as ArtifactError;
  t.equal(error.reason, "ArtifactChecksumMismatch");
  t.match(error.message, /does not match the declared sha256/);
  t.notMatch(error.message, actual, "the actual digest is not echoed");
});

t.test("the agent takes the artifact URL rule from the API: schemes and repository paths", async (t) => {
  const sha256 = "a".repeat(64);
  const { pods, rejected } = desiredPods([
    rawTask("ftp", { command: ["x"], artifact: { url: "ftp://example.com/x", sha256 } }),
    rawTask("unresolved", { command: ["x"], artifact: { url: "scripts/run.sh", sha256 } }),
    rawTask("fetched", { command: ["x"], artifact: { url: "https://example.com/x", sha256 } }),
  ]);
  t.same(
    pods.map((p) => p.name),
    ["fetched-0"],
  );
  t.match(rejected, [
    { name: "ftp", message: /spec\.raw\.artifact\.url has a scheme the agents do not fetch/ },
    { name: "unresolved", message: /spec\.raw\.artifact\.url .*hub/ },
  ]);
});
