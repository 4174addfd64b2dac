// The Addon controller on a real store: one AddonRelease per target cluster with the rendered
// objects, releases of clusters no longer targeted deleted, the agents' release statuses summed
// into the Addon's, and after a restart without a catalog what was rendered stands.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t, { type Test } from "tap";
import type { Addon, AddonRelease } from "../../../operators/api/index.ts";
import { AddonCatalogHolder, createAddonController } from "../../../operators/controllers/addon/index.ts";
import { modify, openSqliteStore, type Store } from "../../../operators/lib/store/index.ts";
import { readAddonCatalogs } from "../../../operators/source/index.ts";
import { waitFor } from "../../helpers/wait-for.ts";
import { runController } from "../run-controller.ts";

const root = path.resolve(import.meta.dirname, "../../..");
const fixtures = readAddonCatalogs([path.join(root, "tests/fixtures/addon-catalog")], root).catalog;

async function harness(t: Test, dataDir: string, withCatalog = true) {
  const store = openSqliteStore({ dataDir });
  const catalog = new AddonCatalogHolder();
  if (withCatalog) catalog.set(fixtures);
  const { stop } = await runController(t, store, createAddonController({ catalog }));
  return { store, catalog, stop };
}

function addon(name: string, namespace: string | undefined, spec: Partial<Addon["spec"]> = {}): Addon {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Addon",
    metadata: { name, ...(namespace ? { namespace } : {}) },
    spec: { addonName: "demo", version: "1.0.0", ...spec },
  };
}

function cluster(name: string, labels: Record<string, string>) {
  return { apiVersion: "rlinf.io/v1alpha1", kind: "Cluster", metadata: { name, labels }, spec: {} };
}

async function releases(store: Store): Promise<AddonRelease[]> {
  return (await store.list<AddonRelease>("AddonRelease")).items;
}

const where = (r: AddonRelease) => `${r.metadata.namespace}/${r.metadata.name}`;

t.test(
  "a namespaced Addon gets one release with the rendered objects; its status follows the agent's",
  async (t) => {
    const { store } = await harness(t, mkdtempSync(path.join(tmpdir(), "rlark-addon-")));
    await store.create(addon("demo", "agent-east", { namespace: "tools", values: { replicas: 2 } }));
    const [release] = await waitFor("a release", async () => {
      const all = await releases(store);
      return all.length === 1 ? all : undefined;
    });
    t.equal(where(release as AddonRelease), "agent-east/demo");
    t.match(release?.spec, { addonName: "demo", version: "1.0.0", namespace: "tools", clusterWide: false });
    t.same(release?.metadata.finalizers, ["rlark.io/agent-cleanup"], "held until the agent has uninstalled");
    const deployment = release?.spec.objects.find((o) => o.kind === "Deployment") as
      | { metadata: { namespace: string }; spec: { replicas: number } }
      | undefined;
    t.equal(deployment?.spec.replicas, 2);
    t.equal(deployment?.metadata.namespace, "tools");
    await waitFor("Pending before the agent reports", async () => {
      const a = await store.get<Addon>("Addon", "agent-east", "demo");
      return a?.status?.phase === "Pending" ? a : undefined;
    });
    // The agent's report, as report-writer.ts stores it.
    await modify(
      store,
      "AddonRelease",
      "agent-east",
      "demo",
      (r) => {
        r.status = { phase: "Ready", version: "1.0.0", observedGeneration: r.metadata.generation };
      },
      { status: true },
    );
    const ready = await waitFor("Ready", async () => {
      const a = await store.get<Addon>("Addon", "agent-east", "demo");
      return a?.status?.phase === "Ready" ? a : undefined;
    });
    t.match(ready.status, { phase: "Ready", version: "1.0.0", observedGeneration: 1 });
  },
);

t.test("a cluster-wide Addon: every matching Cluster, not one with its own Addon of that name", async (t) => {
  const { store } = await harness(t, mkdtempSync(path.join(tmpdir(), "rlark-addon-")));
  await store.create(cluster("east", { region: "eu" }));
  await store.create(cluster("west", { region: "eu" }));
  await store.create(cluster("far", { region: "us" }));
  await store.create(addon("demo", undefined, { clusterSelector: { matchLabels: { region: "eu" } } }));
  await waitFor("two releases", async () => {
    const all = (await releases(store)).map(where).sort();
    return all.join() === "agent-east/demo,agent-west/demo" ? all : undefined;
  });
  const overview = await waitFor("per-cluster status", async () => {
    const a = await store.get<Addon>("Addon", undefined, "demo");
    return a?.status?.clusters?.length === 2 ? a : undefined;
  });
  t.match(overview.status, {
    phase: "Pending",
    clusters: [
      { cluster: "east", phase: "Pending" },
      { cluster: "west", phase: "Pending" },
    ],
  });
  // A namespaced Addon of the same name in west takes over there; the cluster-wide release goes.
  await store.create(addon("demo", "agent-west", { version: "1.1.0" }));
  // The cluster-wide release is held by its finalizer until the agent has uninstalled; only
  // then does the namespaced one replace it.
  const leaving = await waitFor("the cluster-wide release being uninstalled in west", async () => {
    const r = await store.get<AddonRelease>("AddonRelease", "agent-west", "demo");
    return r?.metadata.deletionTimestamp ? r : undefined;
  });
  t.equal(leaving.spec.clusterWide, true, "not replaced while it is being uninstalled");
  await store.update({ ...leaving, metadata: { ...leaving.metadata, finalizers: [] } });
  const replaced = await waitFor("west's own release", async () => {
    const r = await store.get<AddonRelease>("AddonRelease", "agent-west", "demo");
    return r && !r.spec.clusterWide ? r : undefined;
  });
  t.equal(replaced.spec.version, "1.1.0");
  // A Cluster's labels stop matching: its release goes.
  await modify(store, "Cluster", "", "east", (c) => {
    c.metadata.labels = { region: "us" };
  });
  const gone = await waitFor("east's release being deleted", async () => {
    const r = await store.get<AddonRelease>("AddonRelease", "agent-east", "demo");
    return r?.metadata.deletionTimestamp ? r : undefined;
  });
  t.ok(gone);
});

t.test(
  "a catalog problem is the Addon's Failed status; after a restart what was rendered stands",
  async (t) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "rlark-addon-"));
    const first = await harness(t, dataDir);
    await first.store.create(addon("demo", "agent-east"));
    const rendered = await waitFor("a release", async () => (await releases(first.store))[0]);
    await first.store.create(addon("ghost", "agent-east", { addonName: "nothing" }));
    const failed = await waitFor("Failed", async () => {
      const a = await first.store.get<Addon>("Addon", "agent-east", "ghost");
      return a?.status?.phase === "Failed" ? a : undefined;
    });
    t.equal(failed.status?.message, "nothing 1.0.0 is not in the addon catalog");
    await first.stop();

    const second = await harness(t, dataDir, false);
    await second.store.create(addon("later", "agent-east"));
    const waiting = await waitFor("waiting for the catalog", async () => {
      const a = await second.store.get<Addon>("Addon", "agent-east", "later");
      return a?.status?.phase === "Pending" ? a : undefined;
    });
    t.match(waiting.status?.message, /waiting for the addon catalog/);
    const kept = await second.store.get<AddonRelease>("AddonRelease", "agent-east", "demo");
    t.same(kept?.spec, rendered.spec, "the release rendered before the restart is kept as it was");
    second.catalog.set(fixtures);
    await waitFor("rendered once the catalog arrives", async () =>
      second.store.get<AddonRelease>("AddonRelease", "agent-east", "later"),
    );
  },
);
