// The dashboard in Chromium showing what real parts produced, not a fixture (tests/e2e/dashboard/
// agent-state.ts keeps only what cannot run here): two process-runtime agents (real `rlark agent`
// processes, as root) on a hub on git, one of them reading a capability directory a component
// writes into; pods of one Domain in the two clusters, in network namespaces of their own,
// moving real bytes through their sidecars, nodeservers and the hub's relay; and a kubernetes-
// runtime agent installing an Addon on a real API server (hack/kube: RLARK_FLEET_DIR).
import { mkdirSync, rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Page } from "playwright-core";
import t, { type Test } from "tap";
import type { Addon, DomainPeer, Pod } from "../../../operators/api/index.ts";
import type { Hub } from "../../../operators/hub/index.ts";
import { writeCapabilityStatus } from "../../../operators/lib/capability-status.ts";
import { catalogFiles } from "../../helpers/addon-catalog-files.ts";
import { launchChromium, waitForAddress } from "../../helpers/chromium.ts";
import { DomainClusters, podTaskYaml } from "../../helpers/domain-clusters.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { demoAddonYaml, domainYaml, jobYaml } from "../../helpers/job-yaml.ts";
import { startKubernetesAgentOnHub } from "../../helpers/kubernetes-agent-on-hub.ts";
import { onKube, onRealServers, waitFor } from "../../helpers/wait-for.ts";

/** An IPv4 address as a regular expression's text. */
const ip = (address: string) => address.replaceAll(".", "\\.");

/** A Chromium page logged in to the hub's dashboard as admin; script errors land in `errors`. */
async function dashboardPage(t: Test, hub: Hub, errors: string[]): Promise<Page> {
  if (!hub.dashboard) throw new Error("the hub mounted no dashboard");
  const browser = await launchChromium();
  t.teardown(() => browser.close());
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(hub.dashboard.loginUrl(hub.url));
  await waitForAddress(page, /#\/overview$/);
  return page;
}

t.test("the dashboard shows real capabilities, virtual IPs and Domain traffic", async (t) => {
  const id = Math.floor(Math.random() * 60);
  const m = (pod: string) => `rlark-dash-rs-${process.pid}-${id}-${pod}`;
  const payloadDir = `/tmp/rlark-real-state-${process.pid}-${id}`;
  mkdirSync(payloadDir, { recursive: true });
  t.teardown(() => rmSync(payloadDir, { recursive: true, force: true }));
  const capabilityDir = await mkdtemp(path.join(tmpdir(), "rlark-real-state-caps-"));
  t.teardown(() => rmSync(capabilityDir, { recursive: true, force: true }));
  // What a component on the machine writes (lib/capability-status.ts), before the agent starts.
  writeCapabilityStatus(capabilityDir, {
    name: "device-plugin",
    process: "BACKOFF",
    health: "DEGRADED",
    message: "restarting after a crash",
  });
  // A component that died without a word: its last file is an hour old.
  writeCapabilityStatus(
    capabilityDir,
    { name: "ros-controller", process: "RUNNING", health: "READY" },
    Date.now() - 3_600_000,
  );

  const files = {
    "domains.yaml": domainYaml("lab", `100.${64 + id}.0.0/24`),
    "train.yaml": jobYaml(
      "train",
      [
        podTaskYaml("a", "c1", "sleep 3600", m("a")),
        podTaskYaml(
          "b",
          "c2",
          `python3 -m http.server 8000 --bind 0.0.0.0 --directory ${payloadDir}`,
          m("b"),
        ),
      ],
      { domain: "lab" },
    ),
  };
  const bed = await DomainClusters.start(t, ["c1", "c2"], files, {
    hub: { dashboard: { sourcePollMs: 100 } },
    agentArgs: { c1: ["--capability-dir", capabilityDir] },
  });
  const { hub } = bed;
  const vipA = await bed.vip("c1", m("a"));
  const vipB = await bed.vip("c2", m("b"));
  await bed.run(m("b"), "dd", [
    "if=/dev/urandom",
    `of=${path.join(payloadDir, "payload.bin")}`,
    "bs=1M",
    "count=8",
    "status=none",
  ]);
  await waitFor(
    "B reachable from A by its virtual IP",
    async () =>
      await bed
        .run(m("a"), "curl", [
          "-sSf",
          "--max-time",
          "5",
          "-o",
          "/dev/null",
          `http://${vipB}:8000/payload.bin`,
        ])
        .then(() => true)
        .catch(() => false),
    onRealServers,
  );
  // The pair's figures as c1's agent reports them from its nodeserver.
  const pair = await waitFor(
    "c1's DomainPeer traffic with A -> B and the bytes",
    async () => {
      const peer = await hub.store.get<DomainPeer>("DomainPeer", "agent-c1", "lab");
      return peer?.status?.traffic?.pairs.find(
        (p) => p.source === vipA && p.target === vipB && p.bytesReceived >= 8 * 2 ** 20,
      );
    },
    onRealServers,
  );
  const podA = await waitFor(
    "Pod A by its virtual IP",
    async () =>
      (await hub.store.list<Pod>("Pod", { namespace: "agent-c1" })).items.find(
        (p) => p.status?.domainIP === vipA,
      ),
    onRealServers,
  );

  const errors: string[] = [];
  const page = await dashboardPage(t, hub, errors);

  await t.test("overview: the degraded capability needs attention", async (t) => {
    const row = page.locator("main tr").filter({ hasText: "device-plugin" });
    await row.waitFor();
    t.match(
      await row.textContent(),
      /c1.*device-plugin.*BACKOFF.*DEGRADED.*restarting after a crash/s,
      "its process, health and message",
    );
  });

  await t.test("clusters: the capabilities the agent read, a stale one UNKNOWN", async (t) => {
    await page.goto(`${hub.url}/#/clusters`);
    const caps = page.locator('section[data-cluster="c1"] .caps');
    await caps.filter({ hasText: "ros-controller" }).waitFor();
    const text = (await caps.textContent()) ?? "";
    t.match(text, /device-plugin: DEGRADED/, "the component's own word");
    t.match(text, /ros-controller: UNKNOWN/, "a file not rewritten for long is UNKNOWN, not READY");
    t.match(text, /runtime\/process: READY/, "the agent's own runtime");
    t.notMatch(
      await page.locator('section[data-cluster="c2"]').textContent(),
      /device-plugin/,
      "c2's agent reads no capability directory",
    );
  });

  await t.test("domains: the members' virtual IPs and the live pair figures", async (t) => {
    await page.goto(`${hub.url}/#/domains`);
    const domain = page.locator('section[data-domain="lab"]');
    await domain.waitFor();
    t.match(
      await domain.locator(`tr[data-member="${podA.metadata.name}"]`).textContent(),
      new RegExp(`c1.*${podA.metadata.name}.*${ip(vipA)}/\\d+`, "s"),
      "the member with its cluster and virtual IP",
    );
    t.match(
      await domain.locator('tr[data-pool="c1"]').textContent(),
      /pool: \d+ connections? to the hub/,
      "c1's pool",
    );
    // Both ends report the pair: c1's nodeserver and c2's.
    const rows = domain.locator(`tr[data-pair="${vipA}>${vipB}"]`);
    await rows.nth(1).waitFor();
    const texts = await rows.allTextContents();
    for (const cluster of ["c1", "c2"])
      t.match(
        texts.find((text) => text.startsWith(cluster)),
        new RegExp(`${ip(vipA)} ${podA.metadata.name}.*${ip(vipB)}.*hub.*MiB`, "s"),
        `${cluster}: A -> B through the hub with its bytes (c1 stored ${pair.bytesReceived} received)`,
      );
    const peer = await hub.store.get<DomainPeer>("DomainPeer", "agent-c1", "lab");
    const key = peer?.spec.key.split("\n")[1];
    t.ok(key, "the DomainPeer holds its private key");
    t.notOk((await page.content()).includes(key as string), "which the page never shows");
  });

  await t.test("the Job's page shows the pod's virtual IP", async (t) => {
    await page.goto(`${hub.url}/#/jobs/train`);
    const task = page.locator('tr[data-task="a"]');
    await task.waitFor();
    t.match(await task.textContent(), new RegExp(ip(vipA)), "domain IP");
  });

  t.same(errors, [], "no script errors");
});

t.test("the addons page shows an Addon a kubernetes agent installed Ready", async (t) => {
  const { kubeConfig: kc } = fleetCluster(0);
  const namespace = await testNamespace(t, kc, "dash-addon");
  const agentNamespace = await testNamespace(t, kc, "dash-addon-agent");
  const { hub } = await startHubOnGit(t, {
    files: {
      ...catalogFiles(),
      "clusters.yaml":
        "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: edge\nspec:\n  runtime: kubernetes\n",
      "addon.yaml": demoAddonYaml(namespace),
    },
    dashboard: { sourcePollMs: 100 },
  });
  t.same((await hub.source?.watcher.trigger())?.errors, [], "the repository is valid");
  await startKubernetesAgentOnHub(t, hub, "edge", {
    kubeConfig: kc,
    namespace: agentNamespace,
    reportIntervalMs: 1_000,
  });
  const ready = await waitFor(
    "the Addon Ready (or Failed)",
    async () => {
      const a = await hub.store.get<Addon>("Addon", "agent-edge", "demo");
      return a?.status?.phase === "Ready" || a?.status?.phase === "Failed" ? a : undefined;
    },
    onKube,
  );
  t.equal(ready.status?.phase, "Ready", `Ready, not Failed: ${ready.status?.message ?? ""}`);

  const errors: string[] = [];
  const page = await dashboardPage(t, hub, errors);
  await page.getByRole("link", { name: "Addons" }).click();
  const addon = page.locator('tr[data-addon="demo"]');
  await addon.waitFor();
  t.match(await addon.textContent(), /edge.*Ready.*1\.0\.0/s, "cluster, phase and version");
  t.same(errors, [], "no script errors");
});
