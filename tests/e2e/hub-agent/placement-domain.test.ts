// Placement and Domains with a real hub and two process-runtime agents ("east" and "west"): a Job
// without a Domain runs all its tasks in one cluster, or none when no one cluster can take them
// all, saying why; a Job in a Domain, whose network reaches across clusters, may span them.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { ProcessRuntime } from "../../../operators/agent/runtimes/process/index.ts";
import type { Job, Task } from "../../../operators/api/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { clusterYaml, jobYaml } from "../../helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

/** A Raw task that sleeps, optionally held to one region. */
const task = (name: string, region?: string) => `    - name: ${name}
      role: Actor
      agentType: Raw
${region ? `      clusterSelector: { matchLabels: { region: ${region} } }\n` : ""}      raw:
        kind: Deployment
        command: ["sleep", "300"]
`;

const files = {
  "clusters.yaml": `${clusterYaml("east")}---\n${clusterYaml("west")}`,
  "domain.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Domain
metadata:
  name: lab
spec:
  cidr: 10.0.8.0/24
`,
  // no Domain, no selectors: both tasks go together to one cluster
  "gang.yaml": jobYaml("gang", [task("a"), task("b")]),
  // no Domain, but each task held to another cluster: nothing can be placed
  "split.yaml": jobYaml("split", [task("a", "east"), task("b", "west")]),
  // the same selectors in a Domain: the Job spans both clusters
  "spread.yaml": jobYaml("spread", [task("a", "east"), task("b", "west")], { domain: "lab" }),
};

t.test("a Job without a Domain stays in one cluster; a Job in a Domain may span clusters", async (t) => {
  const { hub } = await startHubOnGit(t, { files });
  await waitFor(
    "clusters from git",
    async () => (await hub.store.get("Cluster", undefined, "west")) ?? undefined,
    onRealServers,
  );
  for (const name of ["east", "west"]) {
    const runtime = await ProcessRuntime.open({
      stateDir: path.join(await mkdtemp(path.join(tmpdir(), `rlark-placement-${name}-`)), "runtime"),
      nodeName: `${name}-node`,
      logger: silentLogger,
    });
    await startAgentOnHub(t, hub, name, { runtime, runtimeKind: "process", reportIntervalMs: 1_000 });
    // after the agent's own teardown, so it runs first (last-in, first-out): the agent's stop
    // stops the runtime too, leaving the pods to a next agent, and this would then do nothing
    t.teardown(() => runtime.stop({ terminatePods: true }));
  }

  const phase = async (name: string) => (await hub.store.get<Job>("Job", undefined, name))?.status?.phase;
  const tasksOf = async (job: string) =>
    (await hub.store.list<Task>("Task", { labelSelector: `rlinf.io/job=${job}` })).items;
  for (const job of ["gang", "spread"])
    await waitFor(`${job} Running`, async () => (await phase(job)) === "Running", onRealServers);

  const gang = await tasksOf("gang");
  t.equal(gang.length, 2);
  t.equal(
    new Set(gang.map((x) => x.metadata.namespace)).size,
    1,
    `both tasks of a Job without a Domain in one cluster (${gang.map((x) => x.metadata.namespace).join(", ")})`,
  );
  const spread = await tasksOf("spread");
  t.same(
    spread.map((x) => `${x.spec.task} ${x.metadata.namespace}`).sort(),
    ["a agent-east", "b agent-west"],
    "a Job in a Domain spans the clusters",
  );
  t.ok(
    spread.every((x) => x.spec.domainCIDR === "10.0.8.0/24"),
    "its Tasks carry the Domain's CIDR",
  );

  const scheduled = await waitFor(
    "split's Scheduled condition False",
    async () => {
      const job = await hub.store.get<Job>("Job", undefined, "split");
      const c = job?.status?.conditions?.find((x) => x.type === "Scheduled");
      return c?.status === "False" ? c : undefined;
    },
    onRealServers,
  );
  t.equal(scheduled.reason, "Unschedulable");
  t.match(scheduled.message, /a Job without a Domain runs all its tasks in one cluster/, "saying why");
  t.same(await tasksOf("split"), [], "and none of its tasks is placed (all or nothing)");
});
