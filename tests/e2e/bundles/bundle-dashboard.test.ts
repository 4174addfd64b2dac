// The dashboard's Bundle view and cluster page in a real Chromium, against a hub whose agent
// applied a Bundle on a real API server of the kwok fleet: the Bundle list and its page (per
// cluster the revision applied, phase and message, per object its health and drifted fields, a
// hand edit shown as drift with the hub's --no-self-heal),
// and the cluster page's Deployment env, ConfigMap contents and Secret key names. A Secret's value
// on that cluster is in no page the browser shows and in no answer the browser received.
import { randomBytes } from "node:crypto";
import { CoreV1Api } from "@kubernetes/client-node";
import t from "tap";
import { KubernetesRuntime } from "../../../operators/agent/runtimes/kubernetes/index.ts";
import type { Bundle } from "../../../operators/api/index.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { launchChromium, waitForAddress } from "../../helpers/chromium.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const core = kc.makeApiClient(CoreV1Api);

const files = (namespace: string) => ({
  "clusters.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: lab, labels: { env: lab } }
spec: { runtime: kubernetes }
`,
  "bundle.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Bundle
metadata: { name: console }
spec:
  path: console
  namespace: ${namespace}
  clusterSelector: { matchLabels: { env: lab } }
`,
  "console/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: { name: web }
spec:
  replicas: 1
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers:
        - name: web
          image: nginx
          env:
            - { name: MODE, value: lab-mode }
            - name: DB_PASSWORD
              valueFrom: { secretKeyRef: { name: db, key: password } }
`,
  "console/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata: { name: settings }
data: { level: verbose-level }
`,
});

t.test("the Bundle view and the cluster page in Chromium; no Secret value reaches the browser", async (t) => {
  const namespace = await testNamespace(t, kc, "bundle-dash");
  const value = `pw-${randomBytes(12).toString("hex")}`;
  await core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: "db" }, type: "Opaque", stringData: { password: value } },
  });
  // --no-self-heal: a hand edit stays, and the page shows it as drift.
  const { hub, revision } = await startHubOnGit(t, {
    files: files(namespace),
    dashboard: true,
    selfHeal: false,
  });
  await waitFor("the Cluster from git", async () => hub.store.get("Cluster", undefined, "lab"), onKube);
  const runtime = await KubernetesRuntime.start({
    kubeConfig: kc,
    defaultNamespace: namespace,
    instance: `lab${randomBytes(3).toString("hex")}`,
    retryIntervalMs: 500,
    bundleDriftIntervalMs: 500,
  });
  await startAgentOnHub(t, hub, "lab", { runtime, runtimeKind: "kubernetes", reportIntervalMs: 500 });
  await waitFor(
    "the Bundle Ready with both objects",
    async () => {
      const b = await hub.store.get<Bundle>("Bundle", undefined, "console");
      return b?.status?.phase === "Ready" && b.status.clusters?.[0]?.objects?.length === 2 ? b : undefined;
    },
    { attempts: 480, everyMs: 250 },
  );
  if (!hub.dashboard) throw new Error("no dashboard");

  const browser = await launchChromium();
  t.teardown(() => browser.close());
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  // Every answer the browser receives from the hub's API (the event stream never ends: not read).
  const received: string[] = [];
  page.on("response", (response) => {
    const { pathname } = new URL(response.url());
    if (pathname.startsWith("/api/") && pathname !== "/api/v1/events")
      void response.text().then(
        (text) => received.push(text),
        () => undefined,
      );
  });
  await page.goto(hub.dashboard.loginUrl(hub.url));
  await waitForAddress(page, /#\/overview$/);
  const shown: string[] = [];

  await t.test("the Bundles list and a Bundle's page", async (t) => {
    await page.getByRole("link", { name: "Bundles" }).click();
    const row = page.locator('tr[data-bundle="console"]');
    await row.getByText("Ready", { exact: true }).waitFor();
    t.match(await row.textContent(), /^console\s*bundle-dash\S*\s*Ready\s*1\/1 Ready\s*2/);
    await row.getByRole("link", { name: "console" }).click();
    await waitForAddress(page, /#\/bundles\/console$/);
    const cluster = page.locator('tr[data-bundle-cluster="lab"]');
    await cluster.waitFor();
    t.match(await cluster.textContent(), new RegExp(`^lab\\s*Ready\\s*${revision?.slice(0, 7)}`));
    for (const object of ["Deployment/web", "ConfigMap/settings"]) {
      const objectRow = page.locator(`tr[data-object="lab/${object}"]`);
      await objectRow.getByText("Healthy").waitFor();
      t.pass(`${object} Healthy`);
    }
    shown.push(await page.content());
  });

  await t.test("a field changed by hand shows as drift on the Bundle's page", async (t) => {
    await core.patchNamespacedConfigMap(
      { name: "settings", namespace, body: [{ op: "replace", path: "/data/level", value: "by-hand" }] },
      undefined,
    );
    const row = page.locator('tr[data-object="lab/ConfigMap/settings"]');
    await row.locator("code.drifted").getByText("/data/level").waitFor({ timeout: 120_000 });
    t.pass("the drifted field is named");
    await page.locator('tr[data-bundle-cluster="lab"]').getByText("Drifted", { exact: true }).waitFor();
    t.match(
      await page.locator('tr[data-bundle-cluster="lab"]').textContent(),
      /drifted from git \(not corrected: the hub runs with --no-self-heal\): ConfigMap \S+\/settings: \/data\/level/,
      "and the cluster's message says what and why",
    );
    shown.push(await page.content());
  });

  await t.test("the cluster page: Deployment env, ConfigMap contents, Secret keys only", async (t) => {
    const base = `${hub.url}/#/clusters/lab/browse?namespace=${namespace}`;
    await page.goto(`${base}&resource=deployments`);
    const env = page.locator('tr[data-deployment="web"]');
    await env.locator('li[data-env="MODE"]').getByText("lab-mode").waitFor();
    t.match(await env.locator('li[data-env="DB_PASSWORD"]').textContent(), /from Secret db key password/);
    shown.push(await page.content());
    await page.goto(`${base}&resource=configmaps`);
    const settings = page.locator('tr[data-configmap="settings"]');
    // What the cluster holds: the hand edit left in place above (--no-self-heal).
    await settings.getByText("by-hand").waitFor();
    t.match(await settings.textContent(), /level\s*by-hand/);
    shown.push(await page.content());
    await page.goto(`${base}&resource=secrets`);
    const secret = page.locator('tr[data-secret="db"]');
    await secret.locator("code.key").getByText("password").waitFor();
    t.match(await secret.textContent(), /^db\s*Opaque\s*password\s*$/);
    shown.push(await page.content());
  });

  t.same(errors, [], "no script errors");
  t.ok(received.length > 3, "the scan read the hub's answers");
  for (const [what, text] of [
    ["pages", shown.join("\n")],
    ["answers", received.join("\n")],
  ] as const)
    t.notOk(text.includes(value), `no Secret value in the browser's ${what}`);
});
