// Disk full on the hub's data dir (a tmpfs of 16 MiB, filled to the last byte): the hub says why
// in GET /api/v1/source (ENOSPC, not a silent stall), keeps serving what it had, applies nothing
// half; once space is back it applies the waiting revision by itself, and a restart on the same
// data dir finds everything (docs/reliability.md, "hub leader × disk full").
import { execFileSync } from "node:child_process";
import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rawJobYaml } from "../helpers/job-yaml.ts";
import { sourceStatus } from "../helpers/source-status.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

/** Writes 64 KiB blocks into `file` until the file system refuses one. */
async function fill(file: string): Promise<void> {
  const handle = await open(file, "w");
  const block = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) await handle.write(block);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  } finally {
    await handle.close().catch(() => undefined);
  }
  // What is left is less than a block: the last bytes, one at a time.
  const last = await open(file, "a");
  try {
    for (;;) await last.write(Buffer.alloc(1));
  } catch {
    // full
  } finally {
    await last.close().catch(() => undefined);
  }
}

t.test("a full data dir: a clear error, reads go on, nothing lost, applied once space is back", async (t) => {
  const dataDir = await mkdtemp(path.join(tmpdir(), "rlark-diskfull-"));
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", dataDir]);
  t.teardown(async () => {
    execFileSync("umount", ["-l", dataDir]);
    await rm(dataDir, { recursive: true, force: true });
  });
  const job = (name: string) => rawJobYaml({ name, command: ["sleep", "1"] });
  const running = await startHubOnGit(t, { dataDir, files: { "a.yaml": job("a") } });
  const store = () => running.hub.store;
  await waitFor(
    "Job a applied",
    async () => (await store().get("Job", undefined, "a")) !== undefined,
    onRealServers,
  );

  const filler = path.join(dataDir, "filler");
  await fill(filler);
  const second = await running.git.commit({ "b.yaml": job("b") });
  const refused = await waitFor(
    "the hub to say the disk is full",
    async () => {
      const status = await sourceStatus(running.hub);
      const said = [
        (status as { fetchError?: string }).fetchError ?? "",
        ...(status.errors ?? []).map((e) => e.message),
      ].join(" ");
      return /ENOSPC|No space left|disk is full|database or disk/i.test(said) ? said : undefined;
    },
    onRealServers,
  );
  t.comment(`the hub said: ${refused}`);
  t.ok(await store().get("Job", undefined, "a"), "what was applied is still served");
  t.notOk(await store().get("Job", undefined, "b"), "nothing of the revision applied half");

  await rm(filler);
  await waitFor(
    "the waiting revision applied once space is back",
    async () =>
      (await sourceStatus(running.hub)).state === "Synced" &&
      (await store().get("Job", undefined, "b")) !== undefined,
    { ...onRealServers, attempts: 1200 },
  );
  t.equal(
    ((await sourceStatus(running.hub)) as { lastAppliedRevision?: string }).lastAppliedRevision,
    second,
  );

  await running.restart();
  await waitFor(
    "the restarted hub synced",
    async () => (await sourceStatus(running.hub)).state === "Synced",
    onRealServers,
  );
  t.ok(await store().get("Job", undefined, "a"), "Job a survives the restart");
  t.ok(await store().get("Job", undefined, "b"), "Job b survives the restart");
});
