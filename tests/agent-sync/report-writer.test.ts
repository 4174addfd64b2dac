// An agent's report written into a real store: its cluster's Nodes and Pods mirrored, Task status
// set, what it no longer reports removed. An agent acts only for its own cluster: whatever it
// names in another cluster's namespace is refused, and so is anything that fails its schema.

import t from "tap";
import { writeReport } from "../../operators/agent-sync/report-writer.ts";
import type { KubeObject, Store } from "../../operators/lib/store/index.ts";
import type { Report, KubeObject as WireObject } from "../../operators/lib/tunnel/index.ts";
import { tempStore } from "../lib/store/helpers.ts";
import { node, pod, recordingLogger, task } from "./fixtures.ts";

function report(objects: { nodes?: KubeObject[]; pods?: KubeObject[]; tasks?: KubeObject[] }): Report {
  const wire = (list: KubeObject[] = []) => list as unknown as WireObject[];
  return {
    type: "report",
    nodes: wire(objects.nodes),
    pods: wire(objects.pods),
    tasks: wire(objects.tasks),
    capabilities: [],
  };
}

async function names(store: Store, kind: string, namespace: string): Promise<string[]> {
  return (await store.list(kind, { namespace })).items.map((o) => o.metadata.name);
}

t.test("Nodes and Pods are mirrored into the reporting cluster's namespace", async (t) => {
  const { store } = tempStore(t);
  const logger = recordingLogger();
  await writeReport(
    store,
    "east",
    report({ nodes: [node("east", "n1")], pods: [pod("east", "train-a-0", "train-a")] }),
    logger,
  );
  t.same(await names(store, "Node", "agent-east"), ["n1"]);
  t.same(await names(store, "Pod", "agent-east"), ["train-a-0"]);
  t.same((await store.get("Pod", "agent-east", "train-a-0"))?.status, { phase: "Running" });
  t.same(logger.lines, []);
});

t.test("a report naming another cluster's namespace is refused, and that cluster is untouched", async (t) => {
  const { store } = tempStore(t);
  const logger = recordingLogger();
  await writeReport(
    store,
    "west",
    report({ nodes: [node("west", "w1")], pods: [pod("west", "w-0", "w")] }),
    logger,
  );
  const west = await store.create(task("west", "train-w"));

  const forged = report({
    nodes: [node("west", "fake-node"), node("east", "n1")],
    pods: [pod("west", "fake-pod", "train-w")],
    tasks: [{ ...west, status: { phase: "Failed", message: "forged" } }],
  });
  await writeReport(store, "east", forged, logger);

  t.same(await names(store, "Node", "agent-west"), ["w1"], "no Node written into agent-west");
  t.same(await names(store, "Pod", "agent-west"), ["w-0"], "west's Pods neither added nor pruned");
  t.equal(
    (await store.get("Task", "agent-west", "train-w"))?.status,
    undefined,
    "west's Task status untouched",
  );
  t.same(await names(store, "Node", "agent-east"), ["n1"], "the reporter's own Node is written");
  t.same(
    logger.lines.map((l) => [l.level, l.message, l.fields?.kind]),
    [
      ["warn", "report object outside the agent's cluster ignored", "Node"],
      ["warn", "report object outside the agent's cluster ignored", "Pod"],
    ],
  );
});

t.test("an object of the wrong kind in a list is refused", async (t) => {
  const { store } = tempStore(t);
  const logger = recordingLogger();
  await writeReport(store, "east", report({ nodes: [pod("east", "p-0", "x")] }), logger);
  t.same(await names(store, "Node", "agent-east"), []);
  t.same(await names(store, "Pod", "agent-east"), []);
  t.equal(logger.lines[0]?.message, "report object outside the agent's cluster ignored");
});

t.test("an object that fails its schema is refused, naming the field", async (t) => {
  const { store } = tempStore(t);
  const logger = recordingLogger();
  const bad = node("east", "n1");
  bad.status = { phase: "Exploded" };
  await writeReport(store, "east", report({ nodes: [bad, node("east", "n2")] }), logger);
  t.same(await names(store, "Node", "agent-east"), ["n2"]);
  t.equal(logger.lines.length, 1);
  t.equal(logger.lines[0]?.message, "invalid object in agent report ignored");
  t.match(String(logger.lines[0]?.fields?.problem), /status/);
});

t.test(
  "Task status is set from the report; a Task being deleted and an invalid status are not",
  async (t) => {
    const { store } = tempStore(t);
    const logger = recordingLogger();
    const running = await store.create(task("east", "running"));
    const invalid = await store.create(task("east", "invalid"));
    const going = await store.create(task("east", "going", { finalizers: ["rlark.io/agent-cleanup"] }));
    await store.delete("Task", "agent-east", "going");
    await writeReport(
      store,
      "east",
      report({
        tasks: [
          { ...running, status: { phase: "Running", readyReplicas: 1 } },
          { ...invalid, status: { phase: "Sideways" } },
          { ...going, status: { phase: "Running" } },
          { ...task("east", "unknown"), status: { phase: "Running" } },
        ],
      }),
      logger,
    );
    t.same((await store.get("Task", "agent-east", "running"))?.status, {
      phase: "Running",
      readyReplicas: 1,
    });
    t.equal((await store.get("Task", "agent-east", "invalid"))?.status, undefined);
    t.equal((await store.get("Task", "agent-east", "going"))?.status, undefined);
    t.equal(await store.get("Task", "agent-east", "unknown"), undefined, "a report creates no Task");
    t.same(
      logger.lines.map((l) => l.message),
      ["invalid task status in agent report ignored"],
    );
  },
);

t.test("what the agent no longer reports goes; git's Node overlays stay", async (t) => {
  const { store } = tempStore(t);
  const logger = recordingLogger();
  const overlay = node("east", "gpu-1", { "rlark.io/managed-by": "git", team: "a" });
  overlay.metadata.annotations = {
    "rlark.io/overlay-keys": JSON.stringify({ labels: ["team"], annotations: [] }),
  };
  delete overlay.status;
  await store.create(overlay);
  await writeReport(
    store,
    "east",
    report({ nodes: [node("east", "gpu-1"), node("east", "n2")], pods: [pod("east", "p-0", "x")] }),
    logger,
  );
  const merged = await store.get("Node", "agent-east", "gpu-1");
  t.same(merged?.metadata.labels, { "rlark.io/managed-by": "git", team: "a" }, "git's overlay keys kept");
  t.same(merged?.status, { phase: "Online" });

  await writeReport(store, "east", report({}), logger);
  t.same(
    await names(store, "Node", "agent-east"),
    ["gpu-1"],
    "the overlay stays, the reported-only Node goes",
  );
  t.same(await names(store, "Pod", "agent-east"), []);
  t.same(logger.lines, []);
});

t.test(
  "Domain traffic: set on the cluster's own DomainPeer only, checked, the rest of status kept",
  async (t) => {
    const { store } = tempStore(t);
    const logger = recordingLogger();
    const peer = (cluster: string): KubeObject => ({
      apiVersion: "rlinf.io/v1alpha1",
      kind: "DomainPeer",
      metadata: { name: "lab", namespace: `agent-${cluster}` },
      spec: { cert: "C", key: "K", prefixLen: 24 },
    });
    for (const cluster of ["east", "west"]) {
      const created = await store.create(peer(cluster));
      await store.updateStatus({ ...created, status: { observedGeneration: 1 } });
    }
    const pair = {
      source: "10.0.1.2",
      target: "10.0.1.3",
      activeStreams: 1,
      bytesSent: 10,
      bytesReceived: 2,
    };
    const traffic = { observedAt: "2026-03-01T10:00:00Z", poolConnections: 1, pairs: [pair] };
    const withTraffic = (cluster: string, value: unknown) =>
      ({ ...peer(cluster), spec: undefined, status: { traffic: value } }) as unknown as WireObject;
    await writeReport(
      store,
      "east",
      { ...report({}), domainPeers: [withTraffic("east", traffic), withTraffic("west", traffic)] },
      logger,
    );
    t.same((await store.get("DomainPeer", "agent-east", "lab"))?.status, { observedGeneration: 1, traffic });
    t.same(
      (await store.get("DomainPeer", "agent-west", "lab"))?.status,
      { observedGeneration: 1 },
      "another cluster's DomainPeer is untouched",
    );

    const tooMany = { ...traffic, pairs: Array.from({ length: 65 }, () => pair) };
    await writeReport(store, "east", { ...report({}), domainPeers: [withTraffic("east", tooMany)] }, logger);
    t.same(
      (await store.get("DomainPeer", "agent-east", "lab"))?.status,
      { observedGeneration: 1, traffic },
      "figures beyond the schema's bounds are refused",
    );
    const refused = logger.lines.find((l) => l.message === "invalid Domain traffic in agent report ignored");
    t.match(refused?.fields?.problem, /pairs/, "logged, naming the field");
  },
);
