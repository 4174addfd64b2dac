import { rm } from "node:fs/promises";
import path from "node:path";
import t from "tap";
import { fillToLastByte, smallTmpfs } from "../helpers/full-disk.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rawJobYaml } from "../helpers/job-yaml.ts";
import { sourceStatus } from "../helpers/source-status.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

t.test("a full data dir: a clear error, reads go on, nothing lost, applied once space is back", async (t) => {
  const dataDir = await smallTmpfs(t, "rlark-diskfull-");
  const job = (name: string) => rawJobYaml({ name, command: ["sleep", "1"] });
  const running = await startHubOnGit(t, { dataDir, files: { "a.yaml": job("a") } });
  const store = () => running.hub.store;
  await waitFor(
    "Job a applied",
    async () => (await store().get("Job", undefined, "a")) !== undefined,
    onRealServers,
  );

  const filler = path.join(dataDir, "filler");
  await fillToLastByte(filler);
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
