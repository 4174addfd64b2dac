// Read-only browsing of a cluster through its agent (lib/tunnel/browse.ts), against a real API
// server (hack/kube): namespaces, Deployments with their env as written, Services, Pods,
// ConfigMaps, and Secrets as key names. A Secret value created there appears in no response, not
// even to requests forged straight onto the tunnel; a viewer may browse; the dashboard page shows
// it in Chromium.
import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { AppsV1Api, CoreV1Api } from "@kubernetes/client-node";
import t from "tap";
import { ProcessRuntime } from "../../../operators/agent/runtimes/process/index.ts";
import { hashPassword } from "../../../operators/dashboard/auth/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { BROWSE_PURPOSE } from "../../../operators/lib/tunnel/index.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { launchChromium } from "../../helpers/chromium.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { startKubernetesAgentOnHub } from "../../helpers/kubernetes-agent-on-hub.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);

const FAST = { ln: 10, r: 8, p: 1 };

async function repository(): Promise<Record<string, string>> {
  return {
    "clusters.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: gpu }
spec: { runtime: kubernetes }
---
apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: bench }
spec: { runtime: process }
`,
    "users/vera.yaml": `apiVersion: rlinf.io/v1alpha1
kind: User
metadata: { name: vera }
spec:
  roles: [viewer]
  passwordHash: "${await hashPassword("plain sight", FAST)}"
`,
  };
}

/** The objects to browse, with a Secret whose value must never come back. */
async function seed(namespace: string, secretValue: string): Promise<void> {
  await core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: "db" }, stringData: { password: secretValue, user: `u-${secretValue}` } },
  });
  await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: "settings" }, data: { mode: "fast" } },
  });
  await core.createNamespacedService({
    namespace,
    body: {
      metadata: { name: "web" },
      spec: { selector: { app: "web" }, ports: [{ port: 80, targetPort: 8080 }] },
    },
  });
  await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name: "web" },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: {
            containers: [
              {
                name: "app",
                image: "example/web:1",
                env: [
                  { name: "MODE", value: "fast" },
                  { name: "DB_PASSWORD", valueFrom: { secretKeyRef: { name: "db", key: "password" } } },
                ],
                envFrom: [{ secretRef: { name: "db" } }],
              },
            ],
          },
        },
      },
    },
  });
}

t.test("browsing a cluster shows its objects and never a Secret value", async (t) => {
  const namespace = await testNamespace(t, kc, "browse");
  const secretValue = `s3cret-${randomBytes(8).toString("hex")}`;
  const forbidden = [secretValue, Buffer.from(secretValue).toString("base64")];
  await seed(namespace, secretValue);
  const { hub } = await startHubOnGit(t, { files: await repository(), dashboard: true });
  await waitFor(
    "users from git",
    async () => (await hub.store.get("User", undefined, "vera")) ?? undefined,
    onKube,
  );
  await startKubernetesAgentOnHub(t, hub, "gpu", { kubeConfig: kc, namespace });
  const processRuntime = await ProcessRuntime.open({
    stateDir: path.join(await mkdtemp(path.join(tmpdir(), "rlark-browse-bench-")), "runtime"),
    logger: silentLogger,
  });
  t.teardown(() => processRuntime.stop());
  await startAgentOnHub(t, hub, "bench", { runtime: processRuntime, runtimeKind: "process" });

  const login = await fetch(`${hub.url}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "vera", password: "plain sight" }),
  });
  const viewerToken = ((await login.json()) as { token: string }).token;
  const bodies: string[] = [];
  const browse = async (cluster: string, query: string, token = viewerToken) => {
    const res = await fetch(`${hub.url}/api/v1/clusters/${cluster}/browse/${query}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const text = await res.text();
    bodies.push(text);
    return { status: res.status, body: JSON.parse(text) as Record<string, unknown> & { items: unknown[] } };
  };

  const namespaces = await waitFor(
    "the agent answers",
    async () => {
      const answer = await browse("gpu", "namespaces?limit=200");
      return answer.status === 200 ? answer.body : undefined;
    },
    onKube,
  );
  t.ok(
    (namespaces.items as { name: string }[]).some((n) => n.name === namespace),
    "a viewer lists the namespaces",
  );

  const deployments = await browse("gpu", `deployments?namespace=${namespace}`);
  t.equal(deployments.status, 200);
  t.match(deployments.body.items, [
    {
      name: "web",
      replicas: 1,
      containers: [
        {
          name: "app",
          image: "example/web:1",
          env: [
            { name: "MODE", value: "fast" },
            { name: "DB_PASSWORD", secretKeyRef: { name: "db", key: "password" } },
          ],
          envFrom: [{ secretRef: "db" }],
        },
      ],
    },
  ]);
  const services = await browse("gpu", `services?namespace=${namespace}`);
  t.match(services.body.items, [
    { name: "web", type: "ClusterIP", ports: [{ port: 80, targetPort: "8080" }] },
  ]);
  const secrets = await browse("gpu", `secrets?namespace=${namespace}`);
  t.same(
    (secrets.body.items as { name: string }[]).find((s) => s.name === "db"),
    { name: "db", type: "Opaque", keys: ["password", "user"] },
    "a Secret is its name, type and keys",
  );
  const configMaps = await browse("gpu", `configmaps?namespace=${namespace}`);
  t.same(
    (configMaps.body.items as { name: string }[]).find((c) => c.name === "settings"),
    {
      name: "settings",
      data: { mode: "fast" },
    },
  );
  await waitFor(
    "the Deployment's pod",
    async () => {
      const pods = await browse("gpu", `pods?namespace=${namespace}`);
      return (pods.body.items as { name: string }[]).some((p) => p.name.startsWith("web-")) || undefined;
    },
    onKube,
  );

  // pages: the namespace holds kube-root-ca.crt and settings
  const first = await browse("gpu", `configmaps?namespace=${namespace}&limit=1`);
  t.equal(first.body.items.length, 1);
  t.type(first.body.continue, "string", "a first page says there is more");
  const second = await browse(
    "gpu",
    `configmaps?namespace=${namespace}&limit=1&continue=${encodeURIComponent(first.body.continue as string)}`,
  );
  t.equal(second.body.items.length, 1);
  t.not((second.body.items[0] as { name: string }).name, (first.body.items[0] as { name: string }).name);

  t.equal((await browse("gpu", `secrets?limit=1`)).status, 400, "namespaced resources need a namespace");
  t.equal((await browse("gpu", `secrets?namespace=${namespace}&limit=0`)).status, 400);
  t.equal((await browse("gpu", `secret?namespace=${namespace}`)).status, 400, "an unknown resource");
  t.equal((await browse("nowhere", "namespaces")).status, 404, "an unknown cluster");
  t.equal((await browse("bench", "namespaces")).status, 501, "a process agent has no cluster API");
  t.equal((await browse("gpu", "namespaces", "not-a-token")).status, 401);
  const post = await fetch(`${hub.url}/api/v1/clusters/gpu/browse/namespaces`, {
    method: "POST",
    headers: { authorization: `Bearer ${hub.adminToken}` },
  });
  t.equal(post.status, 405, "browsing is read-only");

  // Requests written straight onto the tunnel, past the hub's own checks: the agent answers
  // each with an error or with key names, never a value.
  const forged: unknown[] = [
    { resource: "secrets", namespace, fields: ["data"] },
    { resource: "secrets", namespace, name: "db" },
    { resource: "secrets", namespace, verb: "get" },
    { resource: "secrets/db", namespace },
    { resource: "secret", namespace },
    { resource: "secrets", namespace: `${namespace}/db` },
    { resource: "namespaces/../secrets", namespace },
    { resource: "secrets", namespace, continue: "x", __proto__: { data: true } },
    JSON.parse(`{"resource":"secrets","namespace":"${namespace}","__proto__":{"fields":["data"]}}`),
    { resource: "secrets", namespace, limit: 200 },
  ];
  for (const request of forged) {
    const answer = JSON.stringify(await hub.tunnel.request("gpu", BROWSE_PURPOSE, request));
    bodies.push(answer);
    t.ok(/"error"|"keys"/.test(answer), `forged ${JSON.stringify(request)} → ${answer.slice(0, 100)}`);
  }
  for (const body of bodies) for (const value of forbidden) t.notOk(body.includes(value), "no Secret value");
});

t.test("the dashboard's cluster page browses a namespace", async (t) => {
  const namespace = await testNamespace(t, kc, "browse-ui");
  const secretValue = `s3cret-${randomBytes(8).toString("hex")}`;
  await seed(namespace, secretValue);
  const { hub } = await startHubOnGit(t, { files: await repository(), dashboard: true });
  await waitFor(
    "users from git",
    async () => (await hub.store.get("User", undefined, "vera")) ?? undefined,
    onKube,
  );
  await startKubernetesAgentOnHub(t, hub, "gpu", { kubeConfig: kc, namespace });
  await waitFor(
    "gpu online",
    async () => {
      const cluster = await hub.store.get("Cluster", undefined, "gpu");
      return (cluster?.status as { phase?: string } | undefined)?.phase === "Online" || undefined;
    },
    onKube,
  );

  const browser = await launchChromium();
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  await page.goto(hub.url);
  await page.getByLabel("User name").fill("vera");
  await page.getByLabel("Password", { exact: true }).fill("plain sight");
  await page.getByLabel("Password", { exact: true }).press("Enter");
  await page.locator("#connection.live").waitFor();
  await page.getByRole("link", { name: "Clusters", exact: true }).click();
  await page.locator('section[data-cluster="gpu"] a.browse-link').click();
  await page.locator(`#filter-namespace option[value="${namespace}"]`).waitFor({ state: "attached" });
  await page.locator("#filter-namespace").selectOption(namespace);
  const env = page.locator('tr[data-deployment="web"] li[data-env="DB_PASSWORD"]');
  await env.waitFor();
  t.match(await env.textContent(), /from Secret db key password/, "the reference, not the value");
  await page.getByRole("link", { name: "Secrets", exact: true }).click();
  const secret = page.locator('tr[data-secret="db"]');
  await secret.waitFor();
  t.match(await secret.textContent(), /password\s*user/);
  await page.getByRole("link", { name: "Services", exact: true }).click();
  t.match(await page.locator('tr[data-service="web"]').textContent(), /80→8080\/TCP/);
  const html = await page.content();
  t.notOk(html.includes(secretValue), "the value is nowhere on the page");
});
