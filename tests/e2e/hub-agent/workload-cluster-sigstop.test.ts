// The fault matrix's "etcd × SIGSTOP" and "API server × SIGSTOP" cells (docs/reliability.md): a
// workload cluster whose etcd, then whose kube-apiserver, is frozen for 15 s while a Job is
// committed. The hub and the agent's tunnel are not touched (the cluster stays Online); the
// agent's applies wait or fail and are retried, so once the process resumes the new Job's
// Deployment is made, once, and the ones made before are neither made again nor lost. A fleet of
// the test's own (one cluster, one kwok node), so the freezes disturb no other test's cluster.
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { AppsV1Api, KubeConfig, type V1Deployment } from "@kubernetes/client-node";
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

/** One cluster of one kwok node in a folder of its own, stopped at teardown; its processes' pids. */
function ownFleet(t: Test): { kubeConfig: KubeConfig; pids: Map<string, number> } {
  const dir = join(repoRoot, ".cache", `fleet-sigstop-${process.pid}`);
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
  return { kubeConfig, pids: new Map(state.processes.map((p) => [p.name, p.pid])) };
}

t.test(
  "a workload cluster's etcd or API server frozen: the apply waits, nothing lost or doubled",
  async (t) => {
    const { kubeConfig: kc, pids } = ownFleet(t);
    const namespace = await testNamespace(t, kc, "frozen");
    const job = (name: string) =>
      jobYaml(name, [trainerTaskYaml({ namespace, replicas: 1, resources: '{ requests: { cpu: "10m" } }' })]);
    const { hub, git } = await startHubOnGit(t, {
      files: { "cluster.yaml": clusterYaml("cold", "kubernetes"), "a.yaml": job("a") },
    });
    await waitFor("the cluster from git", async () => hub.store.get("Cluster", undefined, "cold"), onKube);
    await startFleetKubeAgent(t, hub, kc, namespace, "cold");
    const apps = kc.makeApiClient(AppsV1Api);
    const deployments = async () => (await apps.listNamespacedDeployment({ namespace })).items;
    const ofJob = (all: V1Deployment[], name: string) =>
      all.filter((d) => d.metadata?.labels?.[JOB_LABEL] === name);
    const made = new Map<string, string | undefined>();
    made.set(
      "a",
      (await waitFor("job a's Deployment", async () => ofJob(await deployments(), "a")[0], onKube)).metadata
        ?.uid,
    );

    const frozen = async (t: Test, processName: string, jobName: string) => {
      const pid = pids.get(processName);
      if (!pid) throw new Error(`the fleet runs no ${processName}`);
      process.kill(pid, "SIGSTOP");
      let stopped = true;
      t.teardown(() => {
        if (stopped) process.kill(pid, "SIGCONT");
      });
      const frozenAt = Date.now();
      await git.commit({ [`${jobName}.yaml`]: job(jobName) });
      await waitFor(
        `job ${jobName}'s Task on the hub`,
        async () =>
          (await hub.store.list("Task")).items.some((task) => task.metadata.labels?.[JOB_LABEL] === jobName),
        onKube,
      );
      while (Date.now() - frozenAt < FROZEN_MS) {
        const cluster = await hub.store.get<Cluster>("Cluster", undefined, "cold");
        t.equal(
          cluster?.status?.phase,
          "Online",
          "the cluster stays Online: the agent's tunnel is not the API server",
        );
        await new Promise((resolve) => setTimeout(resolve, 5000));
      }
      process.kill(pid, "SIGCONT");
      stopped = false;
      const resumedAt = Date.now();

      const all = await waitFor(
        `job ${jobName}'s Deployment once ${processName} is back`,
        async () => {
          const now = await deployments();
          return ofJob(now, jobName).length > 0 ? now : undefined;
        },
        onKube,
      );
      const fresh = ofJob(all, jobName);
      t.equal(fresh.length, 1, "made once");
      // creationTimestamp has whole seconds
      t.ok(
        new Date(fresh[0]?.metadata?.creationTimestamp ?? 0).getTime() >= resumedAt - 1000,
        `made after ${processName} resumed: the apply waited for it`,
      );
      for (const [name, uid] of made) {
        const kept = ofJob(all, name);
        t.equal(kept.length, 1, `job ${name}'s Deployment is still one`);
        t.equal(kept[0]?.metadata?.uid, uid, `job ${name}'s Deployment neither made again nor replaced`);
      }
      made.set(jobName, fresh[0]?.metadata?.uid);
    };

    await t.test("etcd frozen 15 s", (t) => frozen(t, "etcd", "b"));
    await t.test("the kube-apiserver frozen 15 s", (t) => frozen(t, "fleet-1-kube-apiserver", "c"));
  },
);
