// The fault matrix's "etcd × SIGSTOP" cell (docs/reliability.md): a workload cluster whose etcd is
// frozen for 15 s. Its API server cannot answer meanwhile, so the agent's applies fail or wait;
// the hub and the agent's tunnel are not touched (the cluster stays Online), and once etcd
// resumes the Job committed during the freeze gets its Deployment, once, while the one made before
// is neither made again nor lost. A fleet of the test's own (one cluster, one kwok node), so the
// freeze disturbs no other test's cluster.
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { AppsV1Api, KubeConfig } from "@kubernetes/client-node";
import t, { type Test } from "tap";
import type { ClusterEntry } from "../../../hack/kube/paths.ts";
import { repoRoot } from "../../../hack/kube/paths.ts";
import { type Cluster, JOB_LABEL } from "../../../operators/api/index.ts";
import { testNamespace } from "../../helpers/fleet.ts";
import { startFleetKubeAgent } from "../../helpers/fleet-agent-identity.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { clusterYaml, jobYaml, trainerTaskYaml } from "../../helpers/job-yaml.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const FROZEN_MS = 15_000;

/** One cluster of one kwok node in a folder of its own, stopped at teardown. */
function ownFleet(t: Test): { kubeConfig: KubeConfig; etcdPid: number } {
  const dir = join(repoRoot, ".cache", `fleet-etcd-sigstop-${process.pid}`);
  const env = { ...process.env, RLARK_FLEET_DIR: dir };
  const holder = ["--holder", String(process.pid)];
  const up = spawnSync(
    "bash",
    [join(repoRoot, "hack/kube/up"), "--clusters", "1", "--nodes", "1", ...holder],
    {
      env,
      stdio: ["ignore", "inherit", "inherit"],
    },
  );
  t.teardown(() => {
    spawnSync("bash", [join(repoRoot, "hack/kube/down"), ...holder], {
      env,
      stdio: ["ignore", "inherit", "inherit"],
    });
    // the fleet's lock file beside its folder: this folder's name is used once
    rmSync(`${dir}.lock`, { force: true });
  });
  if (up.status !== 0) throw new Error(`hack/kube/up failed (exit ${up.status ?? up.signal})`);
  const [entry] = JSON.parse(readFileSync(join(dir, "clusters.json"), "utf8")) as ClusterEntry[];
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(entry!.kubeconfig);
  const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8")) as {
    processes: { name: string; pid: number }[];
  };
  const etcd = state.processes.find((p) => p.name === "etcd");
  if (!etcd) throw new Error(`the fleet in ${dir} runs no etcd`);
  return { kubeConfig, etcdPid: etcd.pid };
}

t.test(
  "a workload cluster's etcd frozen: the hub goes on, the apply waits, nothing lost or doubled",
  async (t) => {
    const { kubeConfig: kc, etcdPid } = ownFleet(t);
    const namespace = await testNamespace(t, kc, "etcd-stop");
    const job = (name: string) =>
      jobYaml(name, [trainerTaskYaml({ namespace, replicas: 1, resources: '{ requests: { cpu: "10m" } }' })]);
    const { hub, git } = await startHubOnGit(t, {
      files: { "cluster.yaml": clusterYaml("cold", "kubernetes"), "a.yaml": job("a") },
    });
    await waitFor("the cluster from git", async () => hub.store.get("Cluster", undefined, "cold"), onKube);
    await startFleetKubeAgent(t, hub, kc, namespace, "cold");
    const apps = kc.makeApiClient(AppsV1Api);
    const deployments = async () => (await apps.listNamespacedDeployment({ namespace })).items;
    const before = await waitFor(
      "job a's Deployment",
      async () => (await deployments()).find((d) => d.metadata?.labels?.[JOB_LABEL] === "a"),
      onKube,
    ).catch(async () => {
      throw new Error(
        `no Deployment of job a; there are ${JSON.stringify((await deployments()).map((d) => d.metadata?.labels))}`,
      );
    });

    process.kill(etcdPid, "SIGSTOP");
    let frozen = true;
    t.teardown(() => {
      if (frozen) process.kill(etcdPid, "SIGCONT");
    });
    const frozenAt = Date.now();
    await git.commit({ "b.yaml": job("b") });
    await waitFor(
      "job b's Task on the hub",
      async () =>
        (await hub.store.list("Task")).items.some((task) => task.metadata.labels?.[JOB_LABEL] === "b"),
      onKube,
    );
    while (Date.now() - frozenAt < FROZEN_MS) {
      const cluster = await hub.store.get<Cluster>("Cluster", undefined, "cold");
      t.equal(
        cluster?.status?.phase,
        "Online",
        "the cluster stays Online: the agent's tunnel is not the API server",
      );
      await new Promise((resolve) => setTimeout(resolve, 3000));
    }
    process.kill(etcdPid, "SIGCONT");
    frozen = false;
    const resumedAt = Date.now();

    const after = await waitFor(
      "job b's Deployment once etcd is back",
      async () => {
        const all = await deployments();
        return all.some((d) => d.metadata?.labels?.[JOB_LABEL] === "b") ? all : undefined;
      },
      onKube,
    );
    const b = after.filter((d) => d.metadata?.labels?.[JOB_LABEL] === "b");
    t.equal(b.length, 1, "made once");
    // creationTimestamp has whole seconds
    t.ok(
      new Date(b[0]?.metadata?.creationTimestamp ?? 0).getTime() >= resumedAt - 1000,
      "made after etcd resumed: the apply waited for it",
    );
    const a = after.filter((d) => d.metadata?.labels?.[JOB_LABEL] === "a");
    t.equal(a.length, 1, "job a's Deployment is still the one");
    t.equal(a[0]?.metadata?.uid, before.metadata?.uid, "neither made again nor replaced");
  },
);
