// The fleet is what it claims: independent real clusters at the pinned version, with fake nodes
// shaped like the project's GPU and robot nodes.
import { readFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { ApiException, CoreV1Api, KubeConfig, VersionApi } from "@kubernetes/client-node";
import t from "tap";
import { fleetDir, readVersions } from "../../../hack/kube/paths.ts";
import { fleetClusters, testNamespace } from "../../helpers/fleet.ts";

const clusters = fleetClusters();

t.test("clusters.json lists every cluster with an absolute kubeconfig and its own server", async (t) => {
  const summary = JSON.parse(readFileSync(join(fleetDir(), "clusters.json"), "utf8")) as {
    name: string;
    kubeconfig: string;
    server: string;
  }[];
  t.ok(summary.length >= 2, "at least two clusters");
  t.same(Object.keys(summary[0]!).sort(), ["kubeconfig", "name", "server"]);
  t.ok(
    summary.every((c) => isAbsolute(c.kubeconfig)),
    "kubeconfig paths are absolute",
  );
  t.equal(new Set(summary.map((c) => c.server)).size, summary.length, "every cluster has its own server");
  t.ok(
    summary.every((c) => /^https:\/\/127\.0\.0\.1:\d+$/.test(c.server)),
    "servers listen on loopback",
  );
});

t.test("every cluster runs the pinned Kubernetes version and is ready", async (t) => {
  const pinned = readVersions().k8s;
  for (const c of clusters) {
    const version = await c.kubeConfig.makeApiClient(VersionApi).getCode();
    t.equal(version.gitVersion, pinned, `${c.name} reports ${pinned}`);
  }
});

t.test("nodes are Ready kwok nodes shaped like GPU and robot nodes", async (t) => {
  for (const c of clusters) {
    const nodes = (await c.kubeConfig.makeApiClient(CoreV1Api).listNode()).items;
    t.ok(nodes.length >= 2, `${c.name} has nodes`);
    for (const n of nodes) {
      t.ok(
        n.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"),
        `${c.name}/${n.metadata?.name} is Ready`,
      );
      t.equal(n.metadata?.annotations?.["kwok.x-k8s.io/node"], "fake");
    }
    const gpu = nodes.filter((n) => n.metadata?.labels?.["nvidia.com/gpu"] === "true");
    const edge = nodes.filter((n) => n.metadata?.labels?.["rlark.io/node-category-robot"] === "true");
    t.ok(gpu.length >= 1 && edge.length >= 1, `${c.name} has GPU and robot nodes`);
    for (const n of gpu) {
      t.match(
        n.status?.allocatable,
        { cpu: "32", memory: "128Gi", "nvidia.com/gpu": "8" },
        "GPU node capacity",
      );
    }
    for (const n of edge) t.equal(n.status?.allocatable?.["rlinf.io/device"], "2", "robot node capacity");
  }
});

t.test("clusters are independent: objects and credentials do not cross", async (t) => {
  const [a, b] = clusters as [(typeof clusters)[0], (typeof clusters)[0]];
  const namespace = await testNamespace(t, a.kubeConfig, "only-in-a");
  const inB = await b.kubeConfig
    .makeApiClient(CoreV1Api)
    .readNamespace({ name: namespace })
    .then(
      () => 200,
      (e: unknown) => (e instanceof ApiException ? e.code : -1),
    );
  t.equal(inB, 404, "a namespace made in one cluster does not exist in the other");

  // cluster A's admin certificate against cluster B's server: B has its own CA
  const crossed = new KubeConfig();
  const user = a.kubeConfig.getCurrentUser()!;
  const cluster = b.kubeConfig.getCurrentCluster()!;
  crossed.loadFromOptions({
    clusters: [cluster],
    users: [user],
    contexts: [{ name: "crossed", cluster: cluster.name, user: user.name }],
    currentContext: "crossed",
  });
  const code = await crossed
    .makeApiClient(CoreV1Api)
    .listNamespace()
    .then(
      () => 200,
      (e: unknown) => (e instanceof ApiException ? e.code : -1),
    );
  t.equal(code, 401, "another cluster's client certificate is refused: 401 Unauthorized");
});
