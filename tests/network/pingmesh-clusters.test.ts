// PingMesh between clusters on the real relay path (as root): three process-runtime clusters on a
// real hub, with pods of one Domain in each; every cluster's nodeserver probes the others through
// the hub's domain relay (CONNECT on its pooled HTTP/2 connection, forwarded on the target's
// reverse link, answered by the target's nodeserver). c2 reaches the hub only through a proxy that
// holds every chunk 400 ms each way, so each probe to or from c2 pays 800 ms more: the hub's
// cluster matrix shows it, and a task that must be near c1 within 800 ms (p99, what placement
// reads: no probe through the proxy can take less, and the clean path has room on a loaded
// machine) goes to c3, not c2.
import t from "tap";
import type { Cluster, Task } from "../../operators/api/index.ts";
import { delayProxy } from "../helpers/delay-proxy.ts";
import { DomainClusters, podTaskYaml } from "../helpers/domain-clusters.ts";
import { domainYaml, jobYaml } from "../helpers/job-yaml.ts";
import { waitFor } from "../helpers/wait-for.ts";

const DELAY_MS = 400;
const slow = { attempts: 1200, everyMs: 100 };

t.test(
  "clusters probe each other through the hub's relay; a delayed path shows and steers near",
  async (t) => {
    const m = (pod: string) => `rlark-pmc-${process.pid}-${pod}`;
    const net = `100.${64 + Math.floor(Math.random() * 60)}`;
    const files = {
      "domains.yaml": `${domainYaml("lab", `${net}.0.0/24`)}---\n${domainYaml("ctl", `${net}.1.0/24`)}`,
      "lab.yaml": jobYaml(
        "lab",
        ["c1", "c2", "c3"].map((c) => podTaskYaml(`on-${c}`, c, "sleep 3600", m(c))),
        { domain: "lab" },
      ),
    };
    // c2's agent is told the proxy's address as the relay: its nodeserver's every connection to the
    // hub (HTTP/2 control, reverse link, data) pays the delay
    const bed = await DomainClusters.start(t, ["c1", "c2", "c3"], files, {
      hub: { intervalMs: 200 },
      agentArgs: {
        c1: ["--cluster-probe-interval", "300ms"],
        c2: ["--cluster-probe-interval", "300ms"],
        c3: ["--cluster-probe-interval", "300ms"],
      },
      beforeAgents: async (relay) => ({ c2: ["--domain-relay", await delayProxy(t, relay, DELAY_MS)] }),
    });
    for (const c of ["c1", "c2", "c3"]) await bed.vip(c, m(c));

    type Pair = NonNullable<NonNullable<NonNullable<Cluster["status"]>["pingMesh"]>["clusterPairs"]>[number];
    const pairsOf = async (cluster: string): Promise<Pair[]> =>
      (await bed.hub.store.get<Cluster>("Cluster", undefined, cluster))?.status?.pingMesh?.clusterPairs ?? [];
    const p50 = async (source: string, target: string, samples: number) => {
      const pair = (await pairsOf(source)).find((p) => p.target === target);
      return pair && pair.figures.samples >= samples && pair.figures.p50Ms !== undefined
        ? pair.figures
        : undefined;
    };
    const figures: Record<string, { p50Ms?: number; p99Ms?: number; loss: number; samples: number }> = {};
    for (const [source, target] of [
      ["c1", "c2"],
      ["c1", "c3"],
      ["c2", "c1"],
      ["c3", "c1"],
    ] as const)
      figures[`${source}>${target}`] = await waitFor(
        `${source} → ${target} measured (20 probes)`,
        () => p50(source, target, 20),
        slow,
      );
    t.comment(JSON.stringify(figures));
    const at = (pair: string) => figures[pair]?.p50Ms ?? Number.NaN;
    // the delay adds 2 × DELAY_MS to each round trip through c2's proxy; the clean path's own time is
    // taken off, so what is left is the injected figure (tolerance: a loaded machine's scheduling)
    for (const pair of ["c1>c2", "c2>c1"]) {
      const added = at(pair) - at("c1>c3");
      t.ok(
        added >= 2 * DELAY_MS - 10 && added <= 2 * DELAY_MS * 1.2,
        `${pair}: p50 ${at(pair).toFixed(1)} ms, ${added.toFixed(1)} ms over the clean path (injected ${2 * DELAY_MS})`,
      );
    }
    t.ok(at("c1>c3") < DELAY_MS, `the clean path stays under the delay: ${at("c1>c3").toFixed(1)} ms`);
    t.equal(figures["c1>c2"]?.loss, 0, "no probe lost");

    // the matrix on the hub's API
    const answer = await fetch(`${bed.hub.url}/api/v1/pingmesh`, {
      headers: { authorization: `Bearer ${bed.hub.adminToken}` },
    });
    const matrix = (await answer.json()) as { pairs: { source: string; target: string }[] };
    for (const pair of ["c1>c2", "c1>c3", "c2>c1", "c3>c1"])
      t.ok(
        matrix.pairs.some((p) => `${p.source}>${p.target}` === pair),
        `GET /api/v1/pingmesh has ${pair}`,
      );

    // near: the policy must run within 800 ms of the arm (on c1), elsewhere than c1: c3 is, c2 is not
    await bed.running.git.commit({
      "robot.yaml": jobYaml(
        "robot",
        [
          podTaskYaml("arm", "c1", "sleep 3600", m("arm")),
          `    - name: policy
      role: Actor
      agentType: Raw
      near: { task: arm, maxRTT: 800ms }
      clusterSelector: { matchExpressions: [{ key: region, operator: NotIn, values: [c1] }] }
      raw:
        kind: Deployment
        command: ["sh", "-c", ${JSON.stringify(`sleep 3600 # ${m("policy")}`)}]
`,
        ],
        { domain: "ctl" },
      ),
    });
    const policy = await waitFor(
      "the policy placed",
      async () =>
        (await bed.hub.store.list<Task>("Task")).items.find(
          (task) => task.metadata.name === "robot-policy",
        ) ?? undefined,
      slow,
    );
    t.equal(policy.metadata.namespace, "agent-c3", "placed on c3, the other cluster within 800 ms of c1");
  },
);
