// The README tour's spec.stopped step on the example it names: examples/jobs/cartpole-serve-local.yaml
// ships stopped; cleared, its process runs on the local process agent and keeps running; set
// again, the Job goes Stopped and the process ends.
import { mkdtemp, readdir, readFile, readlink, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { ProcessRuntime } from "../../operators/agent/runtimes/process/index.ts";
import type { Job } from "../../operators/api/index.ts";
import { startAgentOnHub } from "../helpers/agent-on-hub.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { onProcesses, onRealServers, waitFor } from "../helpers/wait-for.ts";

const examples = path.resolve(import.meta.dirname, "../../examples");
const read = (file: string) => readFile(path.join(examples, file), "utf8");

/** Pids of the `cartpole.mjs serve` node processes working under `dir` (not the shell around one). */
async function serving(dir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => "");
    const [program = ""] = cmdline.split("\0");
    if (path.basename(program) === "node" && cmdline.includes("cartpole.mjs\0serve") && cwd.startsWith(dir))
      pids.push(Number(entry));
  }
  return pids;
}

t.test("the tour's long-running Job runs until spec.stopped ends its process", async (t) => {
  const manifest = await read("jobs/cartpole-serve-local.yaml");
  t.match(manifest, /^ {2}stopped: true$/m, "the example ships stopped");
  const { hub, git } = await startHubOnGit(t, {
    intervalMs: 100,
    files: {
      "clusters/local.yaml": await read("clusters/local.yaml"),
      "scripts/cartpole.mjs": await read("scripts/cartpole.mjs"),
      "jobs/cartpole-serve-local.yaml": manifest,
    },
  });
  await waitFor("Cluster local applied", () => hub.store.get("Cluster", undefined, "local"), onRealServers);
  const stateDir = await mkdtemp(path.join(tmpdir(), "rlark-tour-"));
  const runtime = await ProcessRuntime.open({ stateDir });
  t.teardown(async () => {
    await runtime.stop({ terminatePods: true });
    await rm(stateDir, { recursive: true, force: true });
  });
  await startAgentOnHub(t, hub, "local", { runtime, runtimeKind: "process" });
  const phase = async () =>
    (await hub.store.get<Job>("Job", undefined, "cartpole-serve-local"))?.status?.phase;
  await waitFor("the shipped Job Stopped", async () => (await phase()) === "Stopped", onRealServers);

  await git.commit({ "jobs/cartpole-serve-local.yaml": manifest.replace(/^ {2}stopped: true\n/m, "") });
  await waitFor("the Job Running", async () => (await phase()) === "Running", onRealServers);
  const pids = await waitFor(
    "its process up",
    async () => {
      const found = await serving(stateDir);
      return found.length === 1 ? found : undefined;
    },
    onProcesses,
  );
  // Long-running: still the same process after the hub has seen it Running again.
  await waitFor("a later look at the Job", async () => (await phase()) === "Running", onRealServers);
  t.same(await serving(stateDir), pids, "the process keeps running");

  await git.commit({ "jobs/cartpole-serve-local.yaml": manifest });
  await waitFor("the Job Stopped", async () => (await phase()) === "Stopped", onRealServers);
  await waitFor("its process gone", async () => (await serving(stateDir)).length === 0, onProcesses);
});
