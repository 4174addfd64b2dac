// Golden tests of a Bundle's part of the plan: its objects against the live clusters, from the
// agents' server-side dry-runs (canned here: the renderers are what is pinned; the agents' real
// answers are tested on the fleet in tests/e2e/bundles/bundle-plan.test.ts).
import { join } from "node:path";
import t from "tap";
import {
  type BundleDryRunOutcome,
  bundleObjectRow,
  type DryRunOutcome,
  type Plan,
  planFailed,
  planTree,
  renderPlanMarkdown,
} from "../../../operators/feedback/plan/index.ts";
import type { KubeObject } from "../../../operators/lib/store/index.ts";
import { matchPlanGoldens } from "../../helpers/plan-golden.ts";

const fixtures = join(import.meta.dirname, "../../fixtures/plan");
const repo = join(fixtures, "bundle-repo");
const git = { "rlark.io/managed-by": "git" };
const REVISION = "89abcdef0123456789abcdef0123456789abcdef";
const labels = { "rlark.io/bundle": "site", "rlark.io/managed-by": "rlark-bundle" };

const cluster = (name: string, env: string): KubeObject => ({
  apiVersion: "rlinf.io/v1alpha1",
  kind: "Cluster",
  metadata: { name, labels: { ...git, env } },
  spec: { runtime: "kubernetes" },
  status: { phase: "Online" },
});

const configMap = (name: string, level: string) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "web", labels },
  data: { level },
});

const service = (port: number) => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name: "web", namespace: "web", labels },
  spec: {
    clusterIP: "10.96.0.17",
    ports: [{ port, protocol: "TCP", targetPort: port }],
    selector: { app: "web" },
    type: "ClusterIP",
  },
});

/** What the hub holds after the last revision: the Bundle applied on beijing with an extra ConfigMap. */
const live: KubeObject[] = [
  cluster("beijing", "lab"),
  cluster("shanghai", "lab"),
  cluster("prod", "prod"),
  {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Bundle",
    metadata: { name: "site", labels: git },
    spec: {
      path: "site",
      namespace: "web",
      clusterSelector: { matchLabels: { env: "lab" } },
      objects: [
        configMap("settings", "info"),
        { ...service(80), spec: { ports: [{ port: 80 }], selector: { app: "web" } } },
        configMap("old", "x"),
      ],
    },
    status: { phase: "Ready", clusters: [{ cluster: "beijing", phase: "Ready" }] },
  },
];

/** beijing answers as its API server would; shanghai's agent is away. */
const runner = {
  async dryRun(): Promise<DryRunOutcome> {
    return { state: "passed" };
  },
  async dryRunBundleObject(name: string, object: Record<string, unknown>): Promise<BundleDryRunOutcome> {
    if (name !== "beijing") return { state: "offline" };
    const kind = object.kind;
    if (kind === "ConfigMap")
      return {
        state: "passed",
        live: configMap("settings", "info"),
        planned: configMap("settings", "debug"),
      };
    if (kind === "Service") return { state: "passed", live: service(80), planned: service(3200) };
    const planned = structuredClone(object);
    (planned.spec as Record<string, unknown>).replicas = 1;
    return { state: "passed", live: null, planned };
  },
};

async function plan(): Promise<Plan> {
  return planTree({
    dir: repo,
    revision: REVISION,
    live,
    against: "the live state of hub lab",
    dryRunner: runner,
  });
}

t.test("a Bundle's plan against the live clusters is the same Markdown, text and JSON every time", (t) =>
  matchPlanGoldens(t, plan, "bundle-plan"),
);

t.test("each object on each matched cluster: created, changed, deleted, or why not dry-run", async (t) => {
  const p = await plan();
  t.ok(p.valid, JSON.stringify(p.errors));
  t.same(
    p.bundles.map((b) => [b.cluster, b.object, b.state]),
    [
      ["beijing", "ConfigMap/web/old", "delete"],
      ["beijing", "ConfigMap/web/settings", "change"],
      ["beijing", "Deployment/web/web", "create"],
      ["beijing", "Service/web/web", "change"],
      ["shanghai", "ConfigMap/web/settings", "offline"],
      ["shanghai", "Deployment/web/web", "offline"],
      ["shanghai", "Service/web/web", "offline"],
    ],
    "prod is not matched; shanghai never had the Bundle, so nothing is deleted there",
  );
  const svc = p.bundles.find((b) => b.cluster === "beijing" && b.object === "Service/web/web");
  t.match(svc?.diff, /- {4}- port: 80\n/);
  t.match(svc?.diff, /\+ {4}- port: 3200\n/);
  t.notOk(planFailed(p), "offline clusters do not fail the plan");
  t.match(renderPlanMarkdown(p), /1 cluster offline, not dry-run/);
});

t.test("a refusal or a violation of the cluster's own schema fails the plan", async (t) => {
  const base = { bundle: "site", cluster: "beijing", object: "Deployment/web/web" };
  const refused = bundleObjectRow(base, { state: "failed", message: 'Deployment.apps "web" is invalid' });
  t.match(refused, { state: "failed", message: 'Deployment.apps "web" is invalid', diff: "" });
  const schema = bundleObjectRow(base, {
    state: "passed",
    live: null,
    planned: { kind: "Deployment" },
    schema: ["/spec/replicas: must be integer (the cluster's OpenAPI, v1.34.0)"],
  });
  t.equal(schema.state, "failed");
  t.same(schema.schema, ["/spec/replicas: must be integer (the cluster's OpenAPI, v1.34.0)"]);
  const big = bundleObjectRow(base, { state: "passed", tooLarge: true });
  t.match(big, { state: "change", message: "too large to diff in a comment" });
  const p = await plan();
  p.bundles.push(refused);
  t.ok(planFailed(p));
  t.match(renderPlanMarkdown(p), /dry-run failed for 1 Bundle object/);
});
