// The fault matrix's "agent × disk full" (docs/reliability.md): a process-runtime agent whose state
// dir (where pods' directories and logs go) is a 16 MiB tmpfs filled to the last byte. The pod that
// runs goes on running; a new pod cannot be set up, and the agent reports the apply error as its
// runtime capability DEGRADED with the reason, rather than failing silently; once space is back
// the new pod starts by itself (the agent tries a failed apply again on its own: before, it waited
// for the next change from the hub) and the runtime is READY again.
import { execFileSync } from "node:child_process";
import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { ProcessRuntime } from "../../operators/agent/runtimes/process/index.ts";
import type { Cluster } from "../../operators/api/index.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { startAgentOnHub } from "../helpers/agent-on-hub.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { clusterYaml, rawJobYaml } from "../helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

/** Writes into `file` until the file system refuses even one byte. */
async function fill(file: string): Promise<void> {
  const handle = await open(file, "w");
  try {
    for (const size of [64 * 1024, 1])
      try {
        for (;;) await handle.write(Buffer.alloc(size, 1));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
      }
  } finally {
    await handle.close().catch(() => undefined);
  }
}

t.test("a full state dir: the running pod goes on, the new one waits and the runtime says why", async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-agent-full-"));
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", dir]);
  t.teardown(async () => {
    execFileSync("umount", ["-l", dir]);
    await rm(dir, { recursive: true, force: true });
  });
  const sleeper = (name: string) => rawJobYaml({ name, kind: "Deployment", command: ["sleep", "600"] });
  const { hub, git } = await startHubOnGit(t, {
    files: { "cluster.yaml": clusterYaml("local"), "a.yaml": sleeper("a") },
  });
  await waitFor("cluster from git", async () => hub.store.get("Cluster", undefined, "local"), onRealServers);
  const runtime = await ProcessRuntime.open({ stateDir: path.join(dir, "runtime"), logger: silentLogger });
  await startAgentOnHub(t, hub, "local", { runtime, runtimeKind: "process", reportIntervalMs: 500 });
  t.teardown(() => runtime.stop({ terminatePods: true }));
  const podPhase = async (job: string) =>
    (
      (await hub.store.list("Pod", { namespace: "agent-local" })).items.find((p) =>
        p.metadata.name.startsWith(`${job}-`),
      )?.status as { phase?: string } | undefined
    )?.phase;
  const runtimeCapability = async () =>
    (await hub.store.get<Cluster>("Cluster", undefined, "local"))?.status?.capabilities?.find(
      (c) => c.name === "runtime/process",
    );
  await waitFor("pod a Running", async () => (await podPhase("a")) === "Running", onRealServers);

  const filler = path.join(dir, "filler");
  await fill(filler);
  await git.commit({ "b.yaml": sleeper("b") });
  const degraded = await waitFor(
    "the runtime DEGRADED, saying why",
    async () => {
      const capability = await runtimeCapability();
      return capability?.health === "DEGRADED" ? capability : undefined;
    },
    onRealServers,
  );
  t.match(degraded.message, /ENOSPC|no space left/i, "the reason is the full disk");
  t.equal(await podPhase("a"), "Running", "pod a runs on");
  t.not(await podPhase("b"), "Running", "pod b waits");

  await rm(filler);
  await waitFor(
    "pod b Running once space is back",
    async () => (await podPhase("b")) === "Running",
    onRealServers,
  );
  await waitFor(
    "the runtime READY again",
    async () => (await runtimeCapability())?.health === "READY",
    onRealServers,
  );
  t.equal(await podPhase("a"), "Running", "pod a still runs");
});
