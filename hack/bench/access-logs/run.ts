// Log tail latency, flat in file size: GET …/pods/<name>/log?tailLines=100 through the real hub,
// its SSH tunnel and an in-process process-runtime agent, for a pod whose output.log is 2 MB,
// 200 MB and 2 GB (grown sparse, then real lines appended: only the end is ever read). Prints
// the median and p95 per size, the 2 GB / 2 MB ratio, and the hub's worst event-loop delay
// while serving them (a tail that read the file on the event loop would show there).
//
//   node hack/bench/access-logs/run.ts [requests per size, default 30]
import { appendFile, mkdtemp, readdir, rm, truncate } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { startAgent } from "../../../operators/agent/index.ts";
import { ProcessRuntime, readLogTail } from "../../../operators/agent/runtimes/process/index.ts";
import { startHub } from "../../../operators/hub/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { fileCredentialStore } from "../../../operators/lib/tunnel/index.ts";
import { createGitServer } from "../../../tests/helpers/git-server.ts";
import { hubOptions } from "../../../tests/helpers/hub-on-git.ts";
import { clusterYaml, rawJobYaml } from "../../../tests/helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../../../tests/helpers/wait-for.ts";

const requests = Number(process.argv[2] ?? 30);
const SIZES: [string, number][] = [
  ["2 MB", 2e6],
  ["200 MB", 2e8],
  ["2 GB", 2e9],
];

async function findLog(dir: string): Promise<string | undefined> {
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name === "output.log") return path.join(entry.parentPath, entry.name);
  }
  return undefined;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;

const work = await mkdtemp(path.join(tmpdir(), "rlark-bench-logs-"));
const git = await createGitServer();
await git.commit({
  "cluster.yaml": clusterYaml("local"),
  "job.yaml": rawJobYaml({
    name: "quiet",
    kind: "Deployment",
    command: ["sh", "-c", "echo started; sleep 3600"],
  }),
});
const hub = await startHub(hubOptions(git, path.join(work, "hub")));
const stateDir = path.join(work, "runtime");
// Larger than the biggest size, so the writer never trims the grown file.
const runtime = await ProcessRuntime.open({ stateDir, logger: silentLogger, logs: { maxBytes: 3e9 } });
try {
  await waitFor("cluster from git", async () => hub.store.get("Cluster", undefined, "local"), onRealServers);
  const { token } = await hub.pki.enrollment.createToken({ cluster: "local", ttlMs: 60_000 });
  const agent = await startAgent({
    hub: hub.sshAddress,
    credentials: fileCredentialStore(path.join(work, "credentials.json")),
    token,
    caHash: hub.caFingerprint,
    logger: silentLogger,
    runtime,
    runtimeKind: "process",
    reportIntervalMs: 500,
  });
  const pod = await waitFor(
    "the pod Running",
    async () =>
      (await hub.store.list("Pod", { namespace: "agent-local" })).items.find(
        (p) => (p.status as { phase?: string }).phase === "Running",
      )?.metadata.name,
    onRealServers,
  );
  const log = await waitFor("the pod's log", () => findLog(stateDir), onRealServers);
  const url = `${hub.url}/api/v1/rlinf.io/v1alpha1/pods/${pod}/log?namespace=agent-local&tailLines=100`;
  const headers = { authorization: `Bearer ${hub.adminToken}` };
  const lines = Array.from({ length: 2000 }, (_, i) => `${"x".repeat(90)} line ${i}\n`).join("");
  const medians: number[] = [];
  console.log(
    `log tail latency, ${requests} requests per size, tailLines=100, hub -> tunnel -> agent -> file`,
  );
  // What the machine does to a quiet event loop (the hub's own timers, other load) for comparison.
  const idle = monitorEventLoopDelay({ resolution: 1 });
  idle.enable();
  await new Promise((resolve) => setTimeout(resolve, 2000));
  idle.disable();
  console.log(`idle hub, 2 s: max event-loop delay ${(idle.max / 1e6).toFixed(1)} ms`);
  console.log("size      median ms   p95 ms   file read median ms   max event-loop delay ms");
  for (const [label, size] of SIZES) {
    await truncate(log, size - lines.length);
    await appendFile(log, lines);
    const times: number[] = [];
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    for (let i = 0; i < requests; i++) {
      const start = performance.now();
      const response = await fetch(url, { headers });
      const text = await response.text();
      times.push(performance.now() - start);
      if (response.status !== 200 || !text.endsWith("line 1999\n"))
        throw new Error(`bad answer: ${response.status}`);
    }
    loop.disable();
    const reads: number[] = [];
    for (let i = 0; i < requests; i++) {
      const start = performance.now();
      await readLogTail(log, { tail: 100 });
      reads.push(performance.now() - start);
    }
    reads.sort((a, b) => a - b);
    times.sort((a, b) => a - b);
    medians.push(percentile(times, 0.5));
    console.log(
      `${label.padEnd(9)} ${percentile(times, 0.5).toFixed(1).padStart(9)} ${percentile(times, 0.95).toFixed(1).padStart(8)} ${percentile(reads, 0.5).toFixed(1).padStart(21)} ${(loop.max / 1e6).toFixed(1).padStart(12)}`,
    );
  }
  console.log(
    `ratio 2 GB / 2 MB (median): ${((medians[2] ?? 0) / (medians[0] || 1)).toFixed(2)}x (target < 50 ms, flat)`,
  );
  // The runtime first: agent.stop() stops it leaving its pods running, for the next agent.
  await runtime.stop({ terminatePods: true });
  await agent.stop();
} finally {
  await runtime.stop({ terminatePods: true });
  await hub.stop();
  await git.close();
  await rm(work, { recursive: true, force: true });
}
