// The dashboard's diagnosis views in Chromium, on a real hub on git with real agents: the Network
// page's heatmaps (clusters, then one cluster's nodes) with the answers seed 002 asks of them (one
// node's NIC or a whole rack, fit to be one job?), the AgentGroup table on the cluster page, and
// the UNKNOWN capability badge of an online agent that reports none.
import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { ProcessRuntime } from "../../operators/agent/runtimes/process/index.ts";
import { startAgentTunnel } from "../../operators/agent/tunnel-client.ts";
import type { PingMeshStatus } from "../../operators/api/index.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { fileCredentialStore } from "../../operators/lib/tunnel/index.ts";
import { startAgentOnHub } from "../helpers/agent-on-hub.ts";
import { launchChromium, waitForAddress } from "../helpers/chromium.ts";
import { freePort } from "../helpers/free-port.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { clusterYaml } from "../helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const good = (ms: number) => ({ samples: 64, loss: 0, p50Ms: ms, p99Ms: ms * 1.5, jitterMs: 0.1 });
const lossy = { samples: 64, loss: 0.25, p50Ms: 0.4, p99Ms: 0.9, jitterMs: 0.3 };

t.test("the Network page, the AgentGroup table and the UNKNOWN badge, rendered", async (t) => {
  const { hub } = await startHubOnGit(t, {
    dashboard: { sourcePollMs: 100 },
    files: {
      "clusters.yaml": [clusterYaml("edge"), clusterYaml("core"), clusterYaml("old")].join("---\n"),
    },
  });
  await waitFor("clusters from git", async () => hub.store.get("Cluster", undefined, "old"), onRealServers);
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-pingmesh-dash-"));

  // edge: n2 and n3 share rack r2, every pair of which is lossy; n5's every pair too
  const edgeFigures: PingMeshStatus = {
    observedAt: "2026-12-06T10:00:00Z",
    nodes: [
      { name: "edge-node", topology: { zone: "z1", rack: "r1" } },
      { name: "n2", topology: { zone: "z1", rack: "r2" } },
      { name: "n3", topology: { zone: "z1", rack: "r2" } },
      { name: "n4", topology: {} },
      { name: "n5", topology: { zone: "z1", rack: "r3" } },
    ],
    nodePairs: [
      // edge-node probes ICMP too: n2 loses both, n3 answers echoes while its TCP loses
      { source: "edge-node", target: "n2", figures: lossy, icmp: lossy },
      { source: "edge-node", target: "n3", figures: lossy, icmp: good(0.2) },
      { source: "edge-node", target: "n4", figures: good(0.3) },
      { source: "n2", target: "n3", figures: lossy },
      { source: "n4", target: "edge-node", figures: good(0.3) },
      { source: "n5", target: "edge-node", figures: lossy },
      { source: "n5", target: "n4", figures: lossy },
    ],
    clusterPairs: [{ target: "core", figures: good(12) }],
  };
  const groupPort = await freePort();
  const edge = await ProcessRuntime.open({
    stateDir: path.join(dir, "edge"),
    nodeName: "edge-node",
    logger: silentLogger,
  });
  await startAgentOnHub(t, hub, "edge", {
    runtime: edge,
    runtimeKind: "process",
    reportIntervalMs: 300,
    pingMesh: () => edgeFigures,
    group: { id: "edge-node", listen: `127.0.0.1:${groupPort}`, join: [] },
  });
  const core = await ProcessRuntime.open({
    stateDir: path.join(dir, "core"),
    nodeName: "core-node",
    logger: silentLogger,
  });
  await startAgentOnHub(t, hub, "core", {
    runtime: core,
    runtimeKind: "process",
    reportIntervalMs: 300,
    pingMesh: () => ({
      observedAt: "2026-12-06T10:00:00Z",
      nodes: [{ name: "core-node" }],
      nodePairs: [],
      clusterPairs: [
        { target: "edge", figures: { samples: 64, loss: 0, p50Ms: 150, p99Ms: 180, jitterMs: 2 } },
      ],
    }),
  });
  // old: an agent that reports no capability in its hello (nor heartbeats, nor reports)
  const { token } = await hub.pki.enrollment.createToken({ cluster: "old", ttlMs: 60_000 });
  const old = await startAgentTunnel({
    hub: hub.sshAddress,
    store: fileCredentialStore(path.join(dir, "old-credentials.json")),
    token,
    caHash: hub.caFingerprint,
    hello: { agentVersion: "0.0.9", bootId: randomUUID(), runtime: "process", capabilities: [] },
  });
  t.teardown(() => old.stop());
  for (const name of ["edge", "core", "old"])
    await waitFor(
      `${name} online`,
      async () => {
        const c = await hub.store.get("Cluster", undefined, name);
        return (c?.status as { phase?: string } | undefined)?.phase === "Online";
      },
      onRealServers,
    );
  await waitFor(
    "edge's figures and group on the hub",
    async () => {
      const s = (await hub.store.get("Cluster", undefined, "edge"))?.status as
        | Record<string, unknown>
        | undefined;
      return s?.pingMesh && s.agentGroup ? s : undefined;
    },
    onRealServers,
  );

  if (!hub.dashboard) throw new Error("the hub mounted no dashboard");
  const browser = await launchChromium();
  t.teardown(() => browser.close());
  const page = await (await browser.newContext()).newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(hub.dashboard.loginUrl(hub.url));
  await waitForAddress(page, /#\/overview$/);

  // the cluster page: the AgentGroup table, and UNKNOWN for the agent that reports no capability
  await page.getByRole("link", { name: "Clusters" }).click();
  await waitForAddress(page, /#\/clusters$/);
  const group = page.locator('[data-agent-group="edge"]');
  await waitFor("edge's AgentGroup", async () => (await group.count()) === 1, onRealServers);
  t.match(await group.locator("summary").textContent(), /AgentGroup: 1 alive\s+seen by edge-node/);
  await group.locator("summary").click();
  // Text content, not rendered text: a live redraw between the click and the read may close the
  // table again, and a closed one renders nothing.
  t.same(
    (await group.locator('tr[data-member="edge-node"] td').allTextContents()).map((text) => text.trim()),
    ["edge-node", `127.0.0.1:${groupPort}`, "alive", "0"],
    "the member, its address, state and incarnation",
  );
  // A live update redraws the page; the table the person opened stays open.
  const isOpen = async () => (await group.getAttribute("open")) !== null;
  await waitFor("the group open", isOpen, onRealServers);
  await page.locator("#page").evaluate((main) => main.firstElementChild?.setAttribute("data-before", ""));
  const oldCluster = await hub.store.get("Cluster", undefined, "old");
  if (!oldCluster) throw new Error("no Cluster old");
  await hub.store.update({ ...oldCluster, spec: { ...(oldCluster.spec as object), description: "redrawn" } });
  await waitFor(
    "a redraw",
    async () => (await page.locator("#page [data-before]").count()) === 0,
    onRealServers,
  );
  t.ok(await isOpen(), "the AgentGroup table is still open after the redraw");
  const oldCaps = await page.locator('[data-cluster="old"] .caps').textContent();
  t.match(oldCaps, /capabilities: UNKNOWN\s+none reported/, "an agent that reports none: UNKNOWN");
  t.notMatch(oldCaps, /FAILED|DEGRADED/, "never failed");
  t.match(
    await page.locator('[data-cluster="edge"] .caps').textContent(),
    /network-probe: READY/,
    "edge's badges are its own",
  );
  t.equal(await page.locator('[data-agent-group="old"]').count(), 0, "no group table without a group");

  // the Network page: the clusters' heatmap
  await page.getByRole("link", { name: "Network" }).click();
  await waitForAddress(page, /#\/network$/);
  const clusters = page.locator('[data-heatmap="Clusters"]');
  await waitFor("the clusters' heatmap", async () => (await clusters.count()) === 1, onRealServers);
  t.same(
    await clusters.locator("thead th").allInnerTexts(),
    ["from \\ to", "core", "edge", "old"],
    "every cluster a row and a column",
  );
  const edgeToCore = clusters.locator('td[data-pair="edge>core"]');
  t.equal(await edgeToCore.textContent(), "18", "edge → core: p99 18 ms");
  t.match(await edgeToCore.getAttribute("class"), /heat-2/, "shaded 5-20 ms");
  const coreToEdge = clusters.locator('td[data-pair="core>edge"]');
  t.equal(await coreToEdge.textContent(), "180");
  t.match(
    await coreToEdge.getAttribute("class"),
    /heat-4 heat-degraded/,
    "over 100 ms p99: degraded, marked",
  );
  t.match(await coreToEdge.getAttribute("title"), /degraded: p99 180ms/);
  t.equal(await clusters.locator('td[data-pair="old>edge"]').textContent(), "·", "no figures: not made up");

  // edge's nodes
  await page.locator('a[href="#/network/edge"]').click();
  await waitForAddress(page, /#\/network\/edge$/);
  const nodes = page.locator('[data-heatmap="Nodes"]');
  await waitFor("edge's nodes' heatmap", async () => (await nodes.count()) === 1, onRealServers);
  const lossyCell = nodes.locator('td[data-pair="edge-node>n2"]');
  t.equal(await lossyCell.textContent(), "0.9 / 25%", "p99 and loss");
  t.match(await lossyCell.getAttribute("class"), /heat-0 heat-degraded/, "fast but lossy: degraded");
  t.match(await nodes.locator('td[data-pair="edge-node>n4"]').getAttribute("class"), /^heat-0$/, "healthy");
  t.same(
    await page.locator('tr[data-node="n4"] td').allInnerTexts(),
    ["n4", "unknown", "unknown", "unknown", "unknown", "unknown"],
    "a topology nobody gave stays unknown",
  );
  t.match(
    await page.locator('tr[data-suspect="node/n5"]').textContent(),
    /node n5\s*every one of its 2 pairs is degraded: its NIC or host/,
    "one node's NIC",
  );
  t.match(
    await page.locator('tr[data-suspect="rack/r2"]').textContent(),
    /rack r2\s*all 2 of its nodes have degraded pairs \(n2, n3\): the rack's uplink rather than one node/,
    "a whole rack",
  );
  t.match(
    await page.locator('tr[data-protocols="edge-node>n3"][data-verdict="tcp-only"]').textContent(),
    /edge-node → n3\s*TCP loss 25% while ICMP answers \(p99 0\.3 ms, loss 0%\): the host is up; TCP to its probe port is filtered or the listener is down/,
    "TCP failing while ICMP works",
  );
  t.match(
    await page.locator('tr[data-protocols="edge-node>n2"][data-verdict="both"]').textContent(),
    /TCP loss 25% and ICMP loss 25%: the link or the host, not one port/,
    "both failing",
  );
  t.match(
    await nodes.locator('td[data-pair="edge-node>n3"]').getAttribute("title"),
    /ICMP p99 0\.3 ms, loss 0/,
    "the cell's details carry ICMP",
  );
  t.equal(
    await page.locator('tr[data-suspect="rack/r3"]').count(),
    0,
    "a rack of one node: that node, not the rack",
  );

  // fit to be one job?
  const check = async (set: string) => {
    await page.locator("form.network-fit input[name=nodes]").fill(set);
    await page.locator("form.network-fit button[type=submit]").click();
    const verdict = page.locator("[data-fit]");
    await waitFor(
      `the verdict on ${set}`,
      async () =>
        (await verdict.count()) === 1 &&
        ((await verdict.textContent()) ?? "").includes(set.split(",")[0] ?? ""),
      onRealServers,
    );
    return { fit: await verdict.getAttribute("data-fit"), text: await verdict.textContent() };
  };
  t.same(
    await check("edge-node,n4"),
    { fit: "yes", text: "every pair among edge-node, n4 is measured and healthy" },
    "a healthy set",
  );
  const unfit = await check("n2,n3,n4");
  t.equal(unfit.fit, "no");
  t.match(unfit.text, "n2 → n3: loss 25%");
  t.match(unfit.text, "n2 ↔ n4: not measured");
  t.same(errors, [], "no script errors");
});
