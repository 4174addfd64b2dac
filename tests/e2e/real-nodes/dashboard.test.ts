// The dashboard on a real node (issue 24, item 5): a hub with its dashboard and a kubernetes-runtime
// agent on the shared real-node fleet, a Task's pod running under the real kubelet and containerd.
// In Chromium the web terminal runs the container's shell through pods/exec: what is typed
// reaches it, a full-screen program (vim) draws, writes and quits, a resize reaches it, and
// `exit 3` is shown as 3. The agent reads the real kubelet's Stats Summary through the API
// server's node proxy (granted nodes/proxy, as the overlay docs/kubernetes-runtime.md names): the
// hub's Node has the disk figures of the filesystem the node's kubelet and containerd live on,
// nodefs and imagefs counted once, and the Clusters page shows them; the kwok node has none.
import { statfsSync } from "node:fs";
import { CoreV1Api } from "@kubernetes/client-node";
import t from "tap";
import type { Node } from "../../../operators/api/index.ts";
import { hashPassword } from "../../../operators/dashboard/index.ts";
import { policyYaml } from "../../access/bastion-fixture.ts";
import { logIn, passwordUserYaml, resizeThenExit, shows, statusIs } from "../../access/web-terminal-page.ts";
import { FAST } from "../../dashboard/dashboard-hub.ts";
import { launchChromium } from "../../helpers/chromium.ts";
import { realNodeFleetClusters, testNamespace } from "../../helpers/fleet.ts";
import { startFleetKubeAgent } from "../../helpers/fleet-agent-identity.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { jobYaml } from "../../helpers/job-yaml.ts";
import { realBusyboxTaskYaml, realNodeRecords } from "../../helpers/real-pods.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const [cluster] = realNodeFleetClusters();
const kc = cluster!.kubeConfig;

const realPodTask = (namespace: string) =>
  realBusyboxTaskYaml(
    "shell",
    namespace,
    `                  command: ["sh", "-c", "echo in-the-real-pod > /marker; sleep 2147483647 & wait"]\n`,
  );

t.test("the web terminal and the disk figures of a real node, in Chromium", async (t) => {
  const namespace = await testNamespace(t, kc, "real-dashboard");
  const password = await hashPassword("alice pw", FAST);
  const { hub } = await startHubOnGit(t, {
    dashboard: true,
    files: {
      "cluster.yaml":
        "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: gpu\nspec:\n  runtime: kubernetes\n",
      "users.yaml": passwordUserYaml("alice", ["user"], password),
      "policies.yaml": policyYaml(
        "alice-gpu",
        "  subjects:\n    users: [alice]\n  targets:\n    clusters: [gpu]\n  verbs: [shell]\n",
      ),
      "job.yaml": jobYaml("real", [realPodTask(namespace)]),
    },
  });
  await waitFor("the cluster from git", async () => hub.store.get("Cluster", undefined, "gpu"), onKube);
  const { pod } = await startFleetKubeAgent(t, hub, kc, namespace, "gpu", {
    clusterRules: [{ apiGroups: [""], resources: ["nodes/proxy"], verbs: ["get"] }],
    runtime: { diskStatsIntervalMs: 1000 },
  });
  const core = kc.makeApiClient(CoreV1Api);
  const real = await waitFor(
    "the task's pod Running on the real node",
    async () =>
      (await core.listNamespacedPod({ namespace })).items.find(
        (p) => p.spec?.nodeName === "real-0" && p.status?.phase === "Running",
      ),
    onKube,
  );
  t.ok(real.metadata?.name, "a pod on real-0");
  const browser = await launchChromium();
  t.teardown(() => browser.close());

  await t.test("vim, a resize and `exit 3` in the real container's shell", async (t) => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    t.teardown(() => context.close());
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    await logIn(page, hub.url, "alice", "alice pw");
    await page.goto(`${hub.url}/#/terminal/agent-gpu/${pod}`);
    await statusIs(page, /^connected$/);
    // the pod's hostname is its Kubernetes name: the shell runs in the real pod, not on this host
    await page.keyboard.type("echo hi-$((6*7)) $(hostname); cat /marker\n");
    await shows(page, new RegExp(`hi-42 ${real.metadata?.name}\\s*\\n\\s*in-the-real-pod`));

    await page.keyboard.type("vim /tmp/note\n");
    await shows(page, /~\s*\n\s*~/);
    await page.keyboard.type("ihello from vim");
    await shows(page, /hello from vim/);
    await page.keyboard.press("Escape");
    // An Escape followed at once by more keys can read as one key sequence: send the colon alone
    // and wait for vim's command line before the rest.
    await page.keyboard.type(":");
    await shows(page, /^:\s*$/m);
    await page.keyboard.type("wq\n");
    await page.keyboard.type("clear; cat /tmp/note; echo back-$((2+3))\n");
    await shows(page, /hello from vim\s*\n\s*back-5/);
    t.pass("vim wrote the file in the real container and gave the terminal back");

    await resizeThenExit(t, page);
    t.same(errors, [], "no script errors");
  });

  await t.test("the real kubelet's disk figures reach the hub's Node and the Clusters page", async (t) => {
    // the node's kubelet root and containerd root are in its folder: one filesystem, so its
    // nodefs and imagefs report the same capacity and are counted once
    const [record] = realNodeRecords().filter((r) => r.cluster === cluster!.name);
    const fs = statfsSync(record!.dir);
    const capacity = fs.blocks * fs.bsize;
    const node = await waitFor(
      "real-0's disk figures on the hub",
      async () => {
        const n = (await hub.store.get("Node", "agent-gpu", "real-0")) as Node | undefined;
        return n?.status?.disk?.totalBytes ? n : undefined;
      },
      onKube,
    );
    const disk = node.status?.disk;
    t.equal(disk?.totalBytes, capacity, "the capacity of the node's filesystem, counted once");
    t.ok(
      (disk?.usedBytes ?? 0) > 0 && (disk?.usedBytes ?? 0) < capacity,
      `used ${disk?.usedBytes} of ${capacity}`,
    );
    const kwok = (await hub.store.list("Node", { namespace: "agent-gpu" })).items.filter(
      (n) => n.metadata.name !== "real-0",
    );
    t.ok(kwok.length > 0, "the kwok node is on the hub too");
    t.same(
      kwok.map((n) => (n as Node).status?.disk),
      kwok.map(() => undefined),
      "a kwok node (no kubelet) has no disk figures",
    );

    const context = await browser.newContext();
    t.teardown(() => context.close());
    const page = await context.newPage();
    await logIn(page, hub.url, "alice", "alice pw");
    await page.goto(`${hub.url}/#/clusters`);
    const meter = page.locator('[data-node="real-0"] meter[aria-label="Disk"]');
    const max = await waitFor(
      "real-0's Disk bar",
      async () => ((await meter.count()) > 0 ? meter.getAttribute("max") : undefined),
      onKube,
    );
    t.equal(Number(max), capacity, "the bar's whole is the filesystem's capacity");
    t.match(
      await page.locator('[data-node="real-0"] [data-resource="Disk"] .bar-text').textContent(),
      /^\S+ \S+ \/ \S+ \S+ used, \S+ \S+ free/,
    );
    t.equal(
      await page.locator('[data-node]:not([data-node="real-0"]) [data-resource="Disk"]').count(),
      0,
      "no Disk bar for the kwok node",
    );
  });
});
