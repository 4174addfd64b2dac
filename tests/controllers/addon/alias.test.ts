// Seed 000 §16 names the embodied runtime `embodied-runtime-device-plugin`; the catalog entry is
// `embodied-runtime`, which lists the seed's name as an alias: the same entry renders, and the
// Addon's status says whose alias it is.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import type { Addon, AddonRelease } from "../../../operators/api/index.ts";
import { AddonCatalogHolder, createAddonController } from "../../../operators/controllers/addon/index.ts";
import { Manager } from "../../../operators/lib/controller/index.ts";
import { openSqliteStore } from "../../../operators/lib/store/index.ts";
import { loadAddonCatalog } from "../../../operators/source/index.ts";
import { waitFor } from "../../helpers/wait-for.ts";

const ALIAS = "embodied-runtime-device-plugin";

t.test("the package catalog resolves the seed's name to the embodied-runtime entry", async (t) => {
  const catalog = loadAddonCatalog();
  t.equal(catalog.get(ALIAS, "0.1.0"), catalog.get("embodied-runtime", "0.1.0"), "the same entry");
  t.same(catalog.versions(ALIAS), catalog.versions("embodied-runtime"));
  t.equal(catalog.aliasOf(ALIAS), "embodied-runtime");
  t.equal(catalog.aliasOf("embodied-runtime"), undefined, "the entry's own name is no alias");
});

t.test(
  "an Addon naming the alias renders what the entry's name renders, and says it is an alias",
  async (t) => {
    const store = openSqliteStore({ dataDir: mkdtempSync(path.join(tmpdir(), "rlark-addon-alias-")) });
    const catalog = new AddonCatalogHolder();
    catalog.set(loadAddonCatalog());
    const manager = new Manager({ store, resyncPeriod: 0 });
    manager.add(createAddonController({ catalog }));
    await manager.start();
    t.teardown(async () => {
      await manager.stop();
      await store.close();
    });
    const addon = (namespace: string, addonName: string): Addon => ({
      apiVersion: "rlinf.io/v1alpha1",
      kind: "Addon",
      metadata: { name: "embodied-device-plugin", namespace },
      spec: { addonName, version: "0.1.0", values: { image: "rlark/embodied-device-plugin:0.1.0" } },
    });
    await store.create(addon("agent-beijing", ALIAS));
    await store.create(addon("agent-shanghai", "embodied-runtime"));
    const released = await waitFor("both releases", async () => {
      const all = (await store.list<AddonRelease>("AddonRelease")).items;
      return all.length === 2 ? all : undefined;
    });
    const by = (ns: string) => released.find((r) => r.metadata.namespace === ns)?.spec.objects;
    t.ok(by("agent-beijing")?.length, "the alias renders objects");
    t.same(by("agent-beijing"), by("agent-shanghai"), "the same objects as the entry's own name");
    const status = await waitFor("the alias Addon's status", async () => {
      const a = await store.get<Addon>("Addon", "agent-beijing", "embodied-device-plugin");
      return a?.status?.message ? a.status : undefined;
    });
    t.match(status.message, `${ALIAS} is an alias of the catalog entry embodied-runtime`);
    const plain = await store.get<Addon>("Addon", "agent-shanghai", "embodied-device-plugin");
    t.notMatch(plain?.status?.message ?? "", /alias/);
  },
);
