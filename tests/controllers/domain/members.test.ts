import t from "tap";
import { clusterOf } from "../../../operators/api/index.ts";
import { claimOf, peerSpecs } from "../../../operators/controllers/domain/index.ts";
import { pod } from "./fixtures.ts";

t.test("a pod's claim names its job, task template and name, and its cluster", async (t) => {
  t.same(claimOf(pod("beijing", "actor-head-0", "ppo", "actor-head")), {
    job: "ppo",
    task: "actor-head",
    pod: "actor-head-0",
    cluster: "beijing",
  });
  const bare = pod("beijing", "p", "ppo", "env");
  bare.spec = {};
  bare.metadata.labels = { "rlinf.io/job": "ppo", "rlinf.io/task": "env" };
  t.same(
    claimOf(bare),
    { job: "ppo", task: "env", pod: "p", cluster: "beijing" },
    "a template-name label works too",
  );
  const outside = pod("beijing", "p", "ppo", "env");
  outside.metadata.namespace = "default";
  t.equal(claimOf(outside), undefined, "only agent-<cluster> namespaces are clusters");
  const leaving = pod("beijing", "p", "ppo", "env");
  leaving.metadata.deletionTimestamp = "2026-11-29T00:00:00Z";
  t.equal(claimOf(leaving), undefined, "a pod being deleted claims nothing");
  t.equal(clusterOf("agent-"), undefined);
  t.equal(clusterOf("agent-edge-01"), "edge-01");
});

t.test("peer specs group pods by cluster, ordered by address, and skip pods without one", async (t) => {
  const pods = [
    pod("beijing", "b", "j", "t", { podIP: "172.17.0.2" }),
    pod("beijing", "a", "j", "t", { podIP: "172.17.0.1" }),
    pod("shanghai", "c", "j", "t"),
    pod("shanghai", "waiting", "j", "t"),
  ];
  const specs = peerSpecs({
    pods,
    allocations: [
      { ip: "10.0.0.10", job: "j", task: "t", pod: "a" },
      { ip: "10.0.0.9", job: "j", task: "t", pod: "b" },
      { ip: "10.0.0.2", job: "j", task: "t", pod: "c" },
    ],
    credentials: (cluster) => ({ certPem: `CERT ${cluster}`, keyPem: `KEY ${cluster}` }),
    prefixLen: 24,
  });
  t.same([...specs.keys()], ["agent-beijing", "agent-shanghai"]);
  t.same(
    specs.get("agent-beijing")?.pods?.map((p) => [p.name, p.ip, p.localIP]),
    [
      ["b", "10.0.0.9", "172.17.0.2"],
      ["a", "10.0.0.10", "172.17.0.1"],
    ],
    "numeric address order, not string order",
  );
  t.same(
    specs.get("agent-shanghai")?.pods?.map((p) => p.name),
    ["c"],
  );
  t.same(
    specs.get("agent-shanghai")?.tasks,
    [{ name: "j-t", ips: ["10.0.0.2", "10.0.0.9", "10.0.0.10"] }],
    "every cluster learns the whole Domain's Tasks with their pods' addresses (a Ray worker its head's)",
  );
  t.same(specs.get("agent-beijing")?.tasks, specs.get("agent-shanghai")?.tasks);
  t.match(specs.get("agent-shanghai"), { cert: "CERT shanghai", key: "KEY shanghai", prefixLen: 24 });
  t.match(specs.get("agent-beijing"), { cert: "CERT beijing", key: "KEY beijing" }, "each cluster its own");
});
