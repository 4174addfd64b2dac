// `node hack/bench/status-branch/migrate.ts [--objects N]`: what moving a flat status branch to the
// sharded layout costs. The hub's writer commits N objects' status flat (as a hub before the
// sharded layout did); a new writer, with its own fresh clone (a restarted, upgraded hub), then
// makes the one commit that moves every file. Prints that commit's wall time, its CPU (the writer
// and its git processes) and the remote's size before and after it. Asserts nothing.
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import {
  createStatusBranchWriter,
  renderStatusYaml,
  statusDocumentPath,
} from "../../../operators/feedback/index.ts";
import { createGitRepository } from "../../../operators/source/index.ts";
import { cpuSecondsWithReaped } from "../probes.ts";

const { values } = parseArgs({ options: { objects: { type: "string", default: "100000" } } });
const objects = Number(values.objects);
if (!Number.isInteger(objects) || objects < 1) {
  console.error("usage: migrate.ts [--objects N]");
  process.exit(2);
}
const bytes = (dir: string) => Number(execFileSync("du", ["-sb", dir], { encoding: "utf8" }).split("\t")[0]);
const documents = Array.from({ length: objects }, (_, i) => {
  const name = `train-${String(i).padStart(6, "0")}`;
  return {
    path: statusDocumentPath("Job", name),
    content: renderStatusYaml({ kind: "Job", metadata: { name }, status: { phase: "Running", run: i % 7 } }),
  };
});
const work = await mkdtemp(path.join(tmpdir(), "rlark-bench-status-migrate-"));
try {
  const remoteDir = path.join(work, "remote.git");
  execFileSync("git", ["init", "--bare", "--quiet", "-b", "main", remoteDir]);
  const url = `file://${remoteDir}`;
  const old = path.join(work, "old");
  const flat = createStatusBranchWriter({
    remote: createGitRepository({ url, branch: "main", dataDir: old }),
    dataDir: old,
    layout: "flat",
    documents: () => documents,
  });
  await flat.flush();
  await flat.stop();
  const before = bytes(remoteDir);
  const upgraded = path.join(work, "new");
  const sharded = createStatusBranchWriter({
    remote: createGitRepository({ url, branch: "main", dataDir: upgraded }),
    dataDir: upgraded,
    documents: () => documents,
  });
  const cpu = cpuSecondsWithReaped(process.pid);
  const started = performance.now();
  const result = await sharded.flush();
  const seconds = (performance.now() - started) / 1000;
  const cpuSeconds = cpuSecondsWithReaped(process.pid) - cpu;
  await sharded.stop();
  if (
    result.moved.length !== objects ||
    result.added.length + result.changed.length + result.deleted.length > 0
  )
    throw new Error(
      `expected ${objects} moved and nothing else, got ${JSON.stringify({ ...result, moved: result.moved.length })}`,
    );
  const after = bytes(remoteDir);
  console.log(
    `moving ${objects} status files from flat to sharded: one commit in ${seconds.toFixed(1)} s, ${cpuSeconds.toFixed(1)} CPU s (writer + git, fresh clone included); remote ${(before / 2 ** 20).toFixed(1)} → ${(after / 2 ** 20).toFixed(1)} MiB`,
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
