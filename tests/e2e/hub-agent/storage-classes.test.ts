// GET /api/v1/storage/storageclass?clusters=<id> (seed 000 §14): a StorageClass created on a real
// API server (hack/kube) reaches the hub through the kubernetes runtime's report and is served
// for its cluster, with what a volume claim needs to choose it; deleting it takes it away again.
// A process cluster lists none, an unknown cluster is a 404, and without a token it is a 401. The
// dashboard's cluster page shows it, in Chromium.
import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { StorageV1Api } from "@kubernetes/client-node";
import t from "tap";
import { ProcessRuntime } from "../../../operators/agent/runtimes/process/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { launchChromium, waitForAddress } from "../../helpers/chromium.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { startKubernetesAgentOnHub } from "../../helpers/kubernetes-agent-on-hub.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const storage = kc.makeApiClient(StorageV1Api);

const CLUSTERS = `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: gpu }
spec: { runtime: kubernetes }
---
apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: bench }
spec: { runtime: process }
`;

interface Item {
  cluster: string;
  name: string;
  provisioner?: string;
  reclaimPolicy?: string;
  volumeBindingMode?: string;
  allowVolumeExpansion?: boolean;
}

t.test("a cluster's StorageClasses are served from what its agent reports", async (t) => {
  const namespace = await testNamespace(t, kc, "storage");
  // StorageClasses are cluster-wide: a name of this test's own, never the default class.
  const name = `rlark-test-${randomBytes(4).toString("hex")}`;
  await storage.createStorageClass({
    body: {
      metadata: { name, labels: { "rlark.io/test": "true" } },
      provisioner: "example.com/ceph-rbd",
      reclaimPolicy: "Retain",
      volumeBindingMode: "WaitForFirstConsumer",
      allowVolumeExpansion: true,
    },
  });
  t.teardown(() => storage.deleteStorageClass({ name }).catch(() => undefined));

  const { hub } = await startHubOnGit(t, { files: { "clusters.yaml": CLUSTERS }, dashboard: true });
  await waitFor(
    "the clusters from git",
    async () => (await hub.store.get("Cluster", undefined, "bench")) ?? undefined,
    onKube,
  );
  await startKubernetesAgentOnHub(t, hub, "gpu", { kubeConfig: kc, namespace });
  const processRuntime = await ProcessRuntime.open({
    stateDir: path.join(await mkdtemp(path.join(tmpdir(), "rlark-storage-bench-")), "runtime"),
    logger: silentLogger,
  });
  t.teardown(() => processRuntime.stop());
  await startAgentOnHub(t, hub, "bench", { runtime: processRuntime, runtimeKind: "process" });

  const get = async (query: string, token = hub.adminToken) => {
    const res = await fetch(`${hub.url}/api/v1/storage/storageclass${query}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    return { status: res.status, body: (await res.json()) as { items: Item[]; message?: string } };
  };
  const ours = (items: Item[]) => items.filter((i) => i.name === name);

  const listed = await waitFor(
    "the StorageClass reported",
    async () => {
      const answer = await get("?clusters=gpu");
      return answer.status === 200 && ours(answer.body.items).length > 0 ? answer.body.items : undefined;
    },
    onKube,
  );
  t.same(ours(listed), [
    {
      cluster: "gpu",
      name,
      provisioner: "example.com/ceph-rbd",
      reclaimPolicy: "Retain",
      volumeBindingMode: "WaitForFirstConsumer",
      allowVolumeExpansion: true,
    },
  ]);
  t.ok(
    listed.every((i) => i.cluster === "gpu"),
    "only the cluster asked for",
  );
  t.same(
    listed.map((i) => i.name),
    [...listed.map((i) => i.name)].sort(),
    "sorted by name",
  );

  const both = await get("?clusters=bench,gpu");
  t.equal(both.status, 200);
  t.same(
    ours(both.body.items).map((i) => i.cluster),
    ["gpu"],
    "a process cluster has none",
  );
  t.same(ours((await get("")).body.items).length, 1, "without clusters: every cluster's");
  const unknown = await get("?clusters=gpu,nowhere");
  t.equal(unknown.status, 404);
  t.match(unknown.body.message, /nowhere/);
  t.equal((await get("?clusters=gpu", "")).status, 401, "no token, no list");

  if (!hub.dashboard) throw new Error("the hub mounted no dashboard");
  const browser = await launchChromium();
  try {
    const page = await (await browser.newContext()).newPage();
    await page.goto(hub.dashboard.loginUrl(hub.url));
    await waitForAddress(page, /#\/overview$/);
    await page.goto(`${hub.url}/#/clusters`);
    const row = page.locator(`section[data-cluster="gpu"] tr[data-storage-class="${name}"]`);
    await row.waitFor({ state: "attached" });
    t.match(await row.textContent(), /example\.com\/ceph-rbd.*Retain.*WaitForFirstConsumer.*yes/);
    t.equal(
      await page.locator('section[data-cluster="bench"] .storage-classes').count(),
      0,
      "a process cluster shows no StorageClasses",
    );
  } finally {
    await browser.close();
  }

  await storage.deleteStorageClass({ name });
  await waitFor(
    "the deleted StorageClass gone from the answer",
    async () => ours((await get("?clusters=gpu")).body.items).length === 0,
    onKube,
  );
});
