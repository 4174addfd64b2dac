import { rm } from "node:fs/promises";
import path from "node:path";
import t from "tap";
import { ProcessRuntime } from "../../operators/agent/runtimes/process/index.ts";
import type { Cluster } from "../../operators/api/index.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { startAgentOnHub } from "../helpers/agent-on-hub.ts";
import { fillToLastByte, smallTmpfs } from "../helpers/full-disk.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { clusterYaml, rawJobYaml } from "../helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

t.test("a full state dir: the running pod goes on, the new one waits and the runtime says why", async (t) => {
  const dir = await smallTmpfs(t, "rlark-agent-full-");
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
  await fillToLastByte(filler);
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
