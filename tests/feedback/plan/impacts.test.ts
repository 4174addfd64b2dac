import path from "node:path";
import t from "tap";
import type { Addon, Cluster, Domain, Job } from "../../../operators/api/index.ts";
import { addonImpact } from "../../../operators/feedback/plan/addon-impact.ts";
import { domainImpact } from "../../../operators/feedback/plan/domain-impact.ts";
import type { ObjectChange } from "../../../operators/feedback/plan/index.ts";
import { readAddonCatalogs } from "../../../operators/source/index.ts";

const cluster = (name: string, labels: Record<string, string>): Cluster =>
  ({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Cluster",
    metadata: { name, labels },
    spec: { runtime: "kubernetes" },
  }) as Cluster;
const addon = (name: string, version: string, spec: Partial<Addon["spec"]> = {}, namespace?: string): Addon =>
  ({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Addon",
    metadata: { name, ...(namespace ? { namespace } : {}) },
    spec: { addonName: name, version, ...spec },
  }) as Addon;

t.test(
  "a clusterSelector Addon lands on every planned Cluster it matches, new clusters included",
  async (t) => {
    const live = [
      cluster("a", { gpu: "yes" }),
      cluster("b", { gpu: "no" }),
      addon("metrics", "1.2.0", { clusterSelector: { matchLabels: { gpu: "yes" } } }),
    ];
    const impacts = addonImpact({
      planned: [addon("metrics", "1.10.0", { clusterSelector: { matchLabels: { gpu: "yes" } } })],
      plannedClusters: [
        cluster("a", { gpu: "yes" }),
        cluster("b", { gpu: "no" }),
        cluster("c", { gpu: "yes" }),
      ],
      live,
    });
    t.same(impacts, [
      {
        addon: "metrics",
        cluster: "a",
        action: "upgrade",
        from: "1.2.0",
        to: "1.10.0",
        objects: [],
        manifest: "",
      },
      {
        addon: "metrics",
        cluster: "c",
        action: "install",
        from: "",
        to: "1.10.0",
        objects: [],
        manifest: "",
      },
    ]);
  },
);

t.test(
  "a removed Addon is uninstalled; changed values at the same version reconfigure; older versions downgrade",
  async (t) => {
    const live = [
      addon("a", "1.0.0", {}, "agent-x"),
      addon("b", "1.0.0", { values: { replicas: 1 } }, "agent-x"),
      addon("c", "2.0.0", {}, "agent-x"),
    ];
    const impacts = addonImpact({
      planned: [
        addon("b", "1.0.0", { values: { replicas: 2 } }, "agent-x"),
        addon("c", "1.9.0", {}, "agent-x"),
      ],
      plannedClusters: [],
      live,
    });
    t.same(
      impacts.map((i) => `${i.cluster} ${i.addon} ${i.action}`),
      ["x a uninstall", "x b reconfigure", "x c downgrade"],
    );
  },
);

t.test("with the catalog, each cluster's entry lists the exact objects its agent would apply", async (t) => {
  const root = path.resolve(import.meta.dirname, "../../..");
  const { catalog } = readAddonCatalogs([path.join(root, "tests/fixtures/addon-catalog")], root);
  const [install, uninstall] = addonImpact({
    planned: [addon("demo", "1.1.0", { namespace: "tools", values: { replicas: 2 } }, "agent-x")],
    plannedClusters: [],
    live: [addon("gone", "1.0.0", {}, "agent-y")],
    catalog,
  });
  t.same(install?.objects, [
    "ServiceAccount tools/demo",
    "ClusterRole tools-demo",
    "ClusterRoleBinding tools-demo",
    "ConfigMap tools/demo-config",
    "DaemonSet tools/demo-node",
    "Deployment tools/demo-controller",
  ]);
  t.match(install?.manifest, /kind: Deployment\n[\s\S]*replicas: 2\n/);
  t.same([uninstall?.action, uninstall?.objects, uninstall?.manifest], ["uninstall", [], ""]);
});

t.test("a narrower CIDR counts the allocations it no longer holds", async (t) => {
  const live: Domain = {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Domain",
    metadata: { name: "lab" },
    spec: { cidr: "10.0.0.0/24" },
    status: { ipAllocations: [{ ip: "10.0.0.5" }, { ip: "10.0.0.200" }] },
  };
  const planned: Domain = { ...live, spec: { cidr: "10.0.0.0/28" }, status: undefined } as unknown as Domain;
  const changes: ObjectChange[] = [
    { action: "change", kind: "Domain", name: "lab", namespace: "", file: "d.yaml:1", diff: "" },
  ];
  const [impact] = domainImpact({
    domains: new Map([["lab", planned]]),
    jobs: new Map<string, Job>(),
    changes,
    live: [live],
  });
  t.same(impact, {
    domain: "lab",
    cidr: "10.0.0.0/28",
    usable: 14,
    allocated: 2,
    requested: 0,
    free: 12,
    outOfRange: 1,
  });
});
