// Latency-aware placement with a real hub on git and three process-runtime agents: a task that
// must be near another (`near: {task, maxRTT}`) goes to the cluster whose measured RTT to the
// other task's cluster is within maxRTT; with no measurement yet the Job waits, saying so; with
// none within maxRTT it waits too, and no task of either Job is placed (all or nothing). The
// figures reach the hub the way an agent sends them: in its reports, from a PingMesh feed (here
// a fixed one; tests/network/pingmesh-netns.test.ts shows the real measurement).
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { ProcessRuntime } from "../../operators/agent/runtimes/process/index.ts";
import type { Cluster, Job, PingMeshStatus, Task } from "../../operators/api/index.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { startAgentOnHub } from "../helpers/agent-on-hub.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { clusterYaml, domainYaml, jobYaml } from "../helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const task = (name: string, regions: string[], near?: string) => `    - name: ${name}
      role: Actor
      agentType: Raw
      clusterSelector: { matchExpressions: [{ key: region, operator: In, values: [${regions.join(", ")}] }] }
${near ? `      near: ${near}\n` : ""}      raw:
        kind: Deployment
        command: ["sleep", "300"]
`;

const files = {
  "clusters.yaml": ["arm", "far", "near"].map((name) => clusterYaml(name)).join("---\n"),
  "domain.yaml": domainYaml("lab", "10.0.9.0/24"),
  // "far" sorts first and would win a tie: only the RTT sends policy to "near"
  "robot.yaml": jobYaml(
    "robot",
    [task("robot-arm", ["arm"]), task("policy", ["far", "near"], "{ task: robot-arm, maxRTT: 5ms }")],
    { domain: "lab" },
  ),
  "strict.yaml": jobYaml(
    "strict",
    [task("robot-arm", ["arm"]), task("policy", ["far", "near"], "{ task: robot-arm, maxRTT: 500us }")],
    { domain: "lab" },
  ),
};

t.test(
  "near: placed by measured RTT, waiting without a measurement or when none is near enough",
  async (t) => {
    const { hub } = await startHubOnGit(t, { files });
    await waitFor(
      "clusters from git",
      async () => (await hub.store.get("Cluster", undefined, "near")) ?? undefined,
      onRealServers,
    );
    // what arm's PingMesh has measured: nothing at first
    let armFigures: PingMeshStatus | undefined;
    for (const name of ["arm", "far", "near"]) {
      const runtime = await ProcessRuntime.open({
        stateDir: path.join(await mkdtemp(path.join(tmpdir(), `rlark-pingmesh-${name}-`)), "runtime"),
        nodeName: `${name}-node`,
        logger: silentLogger,
      });
      await startAgentOnHub(t, hub, name, {
        runtime,
        runtimeKind: "process",
        reportIntervalMs: 500,
        ...(name === "arm" ? { pingMesh: () => armFigures } : {}),
      });
      t.teardown(() => runtime.stop({ terminatePods: true }));
    }
    const scheduled = async (job: string) =>
      (await hub.store.get<Job>("Job", undefined, job))?.status?.conditions?.find(
        (c) => c.type === "Scheduled",
      );
    const tasksOf = async (job: string) =>
      (await hub.store.list<Task>("Task", { labelSelector: `rlinf.io/job=${job}` })).items;
    for (const name of ["arm", "far", "near"])
      await waitFor(
        `${name} Online`,
        async () => (await hub.store.get<Cluster>("Cluster", undefined, name))?.status?.phase === "Online",
        onRealServers,
      );

    // once every cluster's node is reported (before, fewer clusters fit)
    const waiting = await waitFor(
      "robot waiting for RTT figures to far and near",
      async () => {
        const c = await scheduled("robot");
        return c?.status === "False" && c.reason === "WaitingForRTT" && /far, near/.test(c.message ?? "")
          ? c
          : undefined;
      },
      onRealServers,
    );
    t.match(
      waiting.message,
      /task policy: no RTT measured between arm and any of far, near/,
      "the condition says what is missing",
    );
    t.same(await tasksOf("robot"), [], "nothing placed meanwhile, not even robot-arm");

    armFigures = {
      observedAt: new Date().toISOString(),
      clusterPairs: [
        { target: "far", figures: { samples: 64, loss: 0, p50Ms: 18, p99Ms: 25, jitterMs: 2 } },
        { target: "near", figures: { samples: 64, loss: 0, p50Ms: 1.5, p99Ms: 2.5, jitterMs: 0.2 } },
      ],
    };
    await waitFor(
      "the RTT figures on arm's Cluster",
      async () =>
        (await hub.store.get<Cluster>("Cluster", undefined, "arm"))?.status?.pingMesh?.clusterPairs
          ?.length === 2,
      onRealServers,
    );
    const placed = await waitFor(
      "robot placed",
      async () => {
        const tasks = await tasksOf("robot");
        return tasks.length === 2 ? tasks : undefined;
      },
      onRealServers,
    );
    t.same(
      placed.map((x) => `${x.spec.task} ${x.metadata.namespace}`).sort(),
      ["policy agent-near", "robot-arm agent-arm"],
      "policy goes to the cluster 2.5 ms from robot-arm's, not the one 25 ms away",
    );

    const refused = await waitFor(
      "strict unschedulable",
      async () => {
        const c = await scheduled("strict");
        return c?.status === "False" && c.reason === "Unschedulable" ? c : undefined;
      },
      onRealServers,
    );
    t.match(
      refused.message,
      /task policy: no cluster within 500us of arm \(far: 25ms, near: 2\.5ms\)/,
      "naming the figures it had",
    );
    t.same(await tasksOf("strict"), [], "and none of strict's tasks is placed");
  },
);
