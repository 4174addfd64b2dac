import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { FakeClock } from "../../operators/lib/clock.ts";
import { Registry } from "../../operators/lib/metrics/index.ts";
import {
  createGitRepository,
  createGitWatcher,
  registerGitSourceMetrics,
} from "../../operators/source/index.ts";
import { createGitServer } from "../helpers/git-server.ts";

t.test("/metrics shows the applied revision's age, fetch failures and the source state", async (t) => {
  const git = await createGitServer();
  const dataDir = await mkdtemp(join(tmpdir(), "rlark-data-"));
  t.teardown(async () => {
    await git.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  await git.commit({ "a.yaml": "a: 1\n" });
  const clock = new FakeClock();
  const watcher = createGitWatcher({
    repository: createGitRepository({ url: git.fileUrl, branch: "main", dataDir }),
    applyRevision: async () => ({ accepted: true, errors: [] }),
    dataDir,
    clock,
  });
  const registry = new Registry();
  const unregister = registerGitSourceMetrics(registry, watcher);
  const labels = `repo="${git.fileUrl}",branch="main"`;

  let text = await registry.text();
  t.match(text, `rlark_source_revision_age_seconds{${labels}} NaN`, "no revision yet");
  t.match(text, `rlark_source_state{${labels},state="Pending"} 1`);

  await watcher.start();
  await watcher.trigger();
  clock.advance(90_000);
  text = await registry.text();
  t.match(text, `rlark_source_revision_age_seconds{${labels}} 90`);
  t.match(text, `rlark_source_state{${labels},state="Synced"} 1`);
  t.match(text, `rlark_source_state{${labels},state="Pending"} 0`);
  t.match(text, `rlark_source_fetch_failures{${labels}} 0`);

  await watcher.stop();
  await git.close();
  const broken = createGitWatcher({
    repository: createGitRepository({ url: git.fileUrl, branch: "main", dataDir }),
    applyRevision: async () => ({ accepted: true, errors: [] }),
    dataDir,
    clock,
  });
  unregister();
  registerGitSourceMetrics(registry, broken);
  await broken.start();
  await broken.trigger();
  await broken.trigger();
  text = await registry.text();
  const failures = Number(text.split(`rlark_source_fetch_failures{${labels}} `)[1]?.split("\n")[0]);
  t.ok(failures >= 2, `consecutive failures counted (${failures})`);
  t.match(text, `rlark_source_state{${labels},state="FetchFailed"} 1`);
  t.match(text, `rlark_source_revision_age_seconds{${labels}} 90`, "the persisted revision's age survives");
  await broken.stop();
});
