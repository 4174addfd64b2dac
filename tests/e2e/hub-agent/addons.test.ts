// Addons end to end: a catalog in the repository (.rlark/addons/, the fixture "demo": RBAC, a
// ConfigMap, a DaemonSet, a Deployment), an Addon in git, the hub rendering it into an
// AddonRelease, a kubernetes-runtime agent on a real API server (hack/kube, kwok nodes) applying
// it with server-side apply and following the rollout; values change, upgrade with pruning,
// downgrade refused or allowed as the catalog says, bad values and unknown versions refused at
// validation with file:line, a too-old cluster Failed, uninstall leaving nothing behind, and a
// process-runtime agent reporting the Addon Failed.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { AppsV1Api, CoreV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import t from "tap";
import { ProcessRuntime } from "../../../operators/agent/runtimes/process/index.ts";
import type { Addon, AddonRelease } from "../../../operators/api/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { catalogFiles } from "../../helpers/addon-catalog-files.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { demoAddonYaml } from "../../helpers/job-yaml.ts";
import { startKubernetesAgentOnHub } from "../../helpers/kubernetes-agent-on-hub.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const rbac = kc.makeApiClient(RbacAuthorizationV1Api);

const CLUSTERS = `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: edge
spec:
  runtime: kubernetes
---
apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: bench
spec:
  runtime: process
`;

t.test("an Addon from git is installed, upgraded, pruned, guarded and uninstalled", async (t) => {
  const namespace = await testNamespace(t, kc, "addon");
  const agentNamespace = await testNamespace(t, kc, "addon-agent");
  const { git, hub } = await startHubOnGit(t, {
    files: {
      ...catalogFiles(),
      "clusters.yaml": CLUSTERS,
      "addon.yaml": demoAddonYaml(namespace, "1.0.0", "{ greeting: hi }"),
      "bench-addon.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Addon
metadata:
  name: demo
  namespace: agent-bench
spec:
  addonName: demo
  version: 1.0.0
`,
    },
  });
  const store = hub.store;
  const first = await hub.source?.watcher.trigger();
  t.same(first?.errors, [], "the repository with its own catalog is valid");
  await waitFor("clusters from git", async () => store.get("Cluster", undefined, "bench"), onKube);
  const phases: string[] = [];
  const watch = await store.watch("Addon", { namespace: "agent-edge" }, (event) => {
    const phase = (event.object as Addon).status?.phase;
    if (phase && phases.at(-1) !== phase) phases.push(phase);
  });
  t.teardown(() => watch.stop());
  await startKubernetesAgentOnHub(t, hub, "edge", {
    kubeConfig: kc,
    namespace: agentNamespace,
    reportIntervalMs: 1_000,
  });
  const processRuntime = await ProcessRuntime.open({
    stateDir: path.join(await mkdtemp(path.join(tmpdir(), "rlark-addon-bench-")), "runtime"),
    logger: silentLogger,
  });
  t.teardown(() => processRuntime.stop({ terminatePods: true }));
  await startAgentOnHub(t, hub, "bench", {
    runtime: processRuntime,
    runtimeKind: "process",
    reportIntervalMs: 1_000,
  });

  const addon = () => store.get<Addon>("Addon", "agent-edge", "demo");
  const readyAt = (generation: number, version: string) =>
    waitFor(
      `Ready at generation ${generation} (${version})`,
      async () => {
        const a = await addon();
        return a?.status?.phase === "Ready" &&
          a.status.observedGeneration === generation &&
          a.status.version === version
          ? a
          : undefined;
      },
      onKube,
    );

  await t.test("install: every object applied, the rollout followed to Ready", async (t) => {
    await readyAt(1, "1.0.0");
    await waitFor("the watch to see Ready", () => phases.at(-1) === "Ready", onKube);
    t.same(phases, ["Pending", "Installing", "Ready"], "Pending, Installing, Ready");
    const ds = await apps.readNamespacedDaemonSet({ name: "demo-node", namespace });
    t.equal(ds.metadata?.labels?.["rlark.io/addon"], "demo");
    t.equal(ds.metadata?.labels?.["rlark.io/managed-by"], "rlark-addon");
    t.ok(
      ds.metadata?.managedFields?.some((f) => f.manager === "rlark-addon" && f.operation === "Apply"),
      "server-side applied by the field manager rlark-addon",
    );
    t.ok((ds.status?.numberReady ?? 0) >= 1, "the DaemonSet's pods run on the robot node (kwok)");
    const dep = await apps.readNamespacedDeployment({ name: "demo-controller", namespace });
    t.equal(dep.status?.availableReplicas, 1);
    const config = await core.readNamespacedConfigMap({ name: "demo-config", namespace });
    t.equal(config.data?.greeting, "hi, from demo 1.0.0");
    await core.readNamespacedConfigMap({ name: "demo-extra", namespace });
    await rbac.readClusterRole({ name: `${namespace}-demo` });
    await rbac.readClusterRoleBinding({ name: `${namespace}-demo` });
    await core.readNamespacedServiceAccount({ name: "demo", namespace });
  });

  await t.test("the process runtime has no Kubernetes: its Addon is Failed, saying so", async (t) => {
    const failed = await waitFor(
      "bench's Addon Failed",
      async () => {
        const a = await store.get<Addon>("Addon", "agent-bench", "demo");
        return a?.status?.phase === "Failed" ? a : undefined;
      },
      onKube,
    );
    t.match(failed.status?.message, /process runtime, which has no Kubernetes API/);
  });

  await t.test("a values change rolls out as Upgrading, then Ready", async (t) => {
    phases.length = 0;
    await git.commit({ "addon.yaml": demoAddonYaml(namespace, "1.0.0", "{ greeting: hello again }") });
    await hub.source?.watcher.trigger();
    await readyAt(2, "1.0.0");
    await waitFor("the watch to see Ready", () => phases.at(-1) === "Ready", onKube);
    t.ok(phases.includes("Upgrading"), `phases seen: ${phases.join(" → ")}`);
    const ds = await apps.readNamespacedDaemonSet({ name: "demo-node", namespace });
    t.same(ds.spec?.template.spec?.containers[0]?.env, [{ name: "GREETING", value: "hello again" }]);
  });

  await t.test("an upgrade prunes the object the new version no longer renders", async (t) => {
    await git.commit({ "addon.yaml": demoAddonYaml(namespace, "1.1.0", "{ greeting: hi }") });
    await hub.source?.watcher.trigger();
    await readyAt(3, "1.1.0");
    await waitFor(
      "demo-extra pruned",
      async () => {
        try {
          await core.readNamespacedConfigMap({ name: "demo-extra", namespace });
          return undefined;
        } catch {
          return true;
        }
      },
      onKube,
    );
    t.pass("demo-extra is gone");
  });

  await t.test(
    "validation refuses a downgrade the catalog does not allow, bad values and unknown versions",
    async (t) => {
      const refused = async (version: string, values: string) => {
        await git.commit({ "addon.yaml": demoAddonYaml(namespace, version, values) });
        const status = await hub.source?.watcher.trigger();
        t.equal(status?.state, "Invalid");
        return (status?.errors ?? []).map((e) => `${e.file}:${e.line} ${e.rule} ${e.path}: ${e.message}`);
      };
      t.same(await refused("0.9.0", "{ greeting: hi }"), [
        "addon.yaml:8 cross/addon-downgrade /spec/version: demo runs 1.1.0; moving down to 0.9.0 is refused (its addon.yaml does not set allowDowngrade: true)",
      ]);
      t.same(await refused("1.1.0", "{ replicas: many }"), [
        "addon.yaml:10 cross/addon-values /spec/values/replicas: must be integer",
      ]);
      t.same(await refused("3.0.0", "{}"), [
        "addon.yaml:8 cross/addon-catalog /spec/version: demo has no version 3.0.0 in the catalog; available: 0.9.0, 1.0.0, 1.1.0, 2.0.0",
      ]);
      const a = await addon();
      t.equal(a?.status?.version, "1.1.0", "what runs is not disturbed");
    },
  );

  await t.test("a downgrade the catalog allows goes through", async (t) => {
    await git.commit({ "addon.yaml": demoAddonYaml(namespace, "1.0.0", "{ greeting: hi }") });
    const status = await hub.source?.watcher.trigger();
    t.equal(status?.state, "Synced");
    const ready = await waitFor(
      "Ready on 1.0.0",
      async () => {
        const a = await addon();
        return a?.status?.phase === "Ready" && a.status.version === "1.0.0" ? a : undefined;
      },
      onKube,
    );
    t.ok(ready);
    await core.readNamespacedConfigMap({ name: "demo-extra", namespace });
  });

  await t.test("a cluster older than minKubernetesVersion: Failed, naming both versions", async (t) => {
    await git.commit({ "addon.yaml": demoAddonYaml(namespace, "2.0.0", "{ greeting: hi }") });
    await hub.source?.watcher.trigger();
    const failed = await waitFor(
      "Failed",
      async () => {
        const a = await addon();
        return a?.status?.phase === "Failed" ? a : undefined;
      },
      onKube,
    );
    t.match(failed.status?.message, /^needs Kubernetes 99\.0 or later; this cluster runs v1\./);
    t.equal(failed.status?.version, "1.0.0", "the installed version stays what runs");
    await core.readNamespacedConfigMap({ name: "demo-extra", namespace });
  });

  await t.test("removing the Addon uninstalls everything it installed", async (t) => {
    await git.commit({ "addon.yaml": null, "bench-addon.yaml": null });
    await hub.source?.watcher.trigger();
    const selector = "rlark.io/addon=demo";
    await waitFor(
      "nothing labelled rlark.io/addon=demo left",
      async () => {
        const left = [
          ...(await core.listNamespacedConfigMap({ namespace, labelSelector: selector })).items,
          ...(await core.listNamespacedServiceAccount({ namespace, labelSelector: selector })).items,
          ...(await apps.listNamespacedDaemonSet({ namespace, labelSelector: selector })).items,
          ...(await apps.listNamespacedDeployment({ namespace, labelSelector: selector })).items,
          ...(await rbac.listClusterRole({ labelSelector: selector })).items.filter(
            (r) => r.metadata?.name === `${namespace}-demo`,
          ),
          ...(await rbac.listClusterRoleBinding({ labelSelector: selector })).items.filter(
            (r) => r.metadata?.name === `${namespace}-demo`,
          ),
          ...(await core.listNamespacedConfigMap({ namespace: agentNamespace })).items.filter((c) =>
            c.metadata?.name?.startsWith("rlark-addon-"),
          ),
        ];
        return left.length === 0;
      },
      onKube,
    );
    await waitFor(
      "the releases released once the agents are done",
      async () => (await store.list<AddonRelease>("AddonRelease")).items.length === 0,
      onKube,
    );
    t.pass("the cluster holds nothing of the Addon, the hub no release");
  });
});
