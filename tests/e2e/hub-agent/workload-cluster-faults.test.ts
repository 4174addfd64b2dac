// The fault matrix's workload-cluster cells (docs/reliability.md): API server and etcd × kill -9,
// SIGSTOP, partition (between them) and disk full (etcd's space quota). One workload cluster's
// etcd or kube-apiserver is frozen, killed or cut off for 10 s, or etcd is out of space until an
// operator frees it, each while a Job is committed. The hub and the agent's tunnel are not
// touched (the cluster stays Online); the agent's applies wait or fail and are retried, so once
// the fault ends the new Job's Deployment is made, once, after it, and the ones made before are
// neither made again nor lost. A fleet of the test's own (one cluster, one kwok node), so the
// faults disturb no other test's cluster; its kube-apiserver is restarted at the start to reach
// etcd through a proxy the test can silence.
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { AppsV1Api, CoreV1Api, KubeConfig, type V1Deployment } from "@kubernetes/client-node";
import t, { type Test } from "tap";
import { killAndRestart } from "../../../hack/chaos/fleet-process.ts";
import type { ClusterEntry } from "../../../hack/kube/paths.ts";
import { repoRoot } from "../../../hack/kube/paths.ts";
import { type Cluster, JOB_LABEL } from "../../../operators/api/index.ts";
import { testNamespace } from "../../helpers/fleet.ts";
import { startFleetKubeAgent } from "../../helpers/fleet-agent-identity.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { clusterYaml, jobYaml, trainerTaskYaml } from "../../helpers/job-yaml.ts";
import { resettableProxy } from "../../helpers/store-through-proxy.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const FAULT_MS = 10_000;

/** One cluster of one kwok node in a folder of its own, stopped at teardown; its processes' pids. */
function ownFleet(t: Test): { dir: string; kubeConfig: KubeConfig; pidOf: (name: string) => number } {
  const dir = join(repoRoot, ".cache", `fleet-faults-${process.pid}`);
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
  // read each time: a restart writes the new pid there
  const pidOf = (name: string) => {
    const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8")) as {
      processes: { name: string; pid: number }[];
    };
    const found = state.processes.find((p) => p.name === name);
    if (!found) throw new Error(`the fleet in ${dir} runs no ${name}`);
    return found.pid;
  };
  return { dir, kubeConfig, pidOf };
}

interface Fault {
  /** What is done, for messages: "etcd frozen". */
  what: string;
  begin(): void | Promise<void>;
  end(): void | Promise<void>;
  /** What the hub shows meanwhile about the agent's failed apply, if it can show anything. */
  reported?: RegExp;
}

const APISERVER = "fleet-1-kube-apiserver";

t.test(
  "a workload cluster's etcd or API server frozen, or cut apart: the apply waits, nothing lost or doubled",
  async (t) => {
    const { dir, kubeConfig: kc, pidOf } = ownFleet(t);
    // the API server reaches etcd through a proxy the test can silence
    const etcdUrl = readFileSync(`/proc/${pidOf("etcd")}/cmdline`, "utf8")
      .split("\0")
      .find((arg) => arg.startsWith("--listen-client-urls="))
      ?.split("=")[1];
    const etcd = new URL(etcdUrl ?? "http://unknown");
    const etcdPath = await resettableProxy(etcd.hostname, Number(etcd.port));
    t.teardown(() => {
      // not awaited: the API server's connections would hold close() until the fleet is down,
      // which runs after this (teardowns go last registered first)
      void etcdPath.close();
      etcdPath.reset();
    });
    await killAndRestart(dir, APISERVER, 0, (args) =>
      args.map((arg) =>
        arg.startsWith("--etcd-servers=") ? `--etcd-servers=http://127.0.0.1:${etcdPath.port}` : arg,
      ),
    );
    const core = kc.makeApiClient(CoreV1Api);
    await waitFor(
      "the API server back, through the proxy to etcd",
      () =>
        core.listNamespace().then(
          () => true,
          () => false,
        ),
      onKube,
    );

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

    const during = async (t: Test, fault: Fault, jobName: string) => {
      await fault.begin();
      let on = true;
      t.teardown(() => {
        if (on) return fault.end();
      });
      const startedAt = Date.now();
      await git.commit({ [`${jobName}.yaml`]: job(jobName) });
      await waitFor(
        `job ${jobName}'s Task on the hub`,
        async () =>
          (await hub.store.list("Task")).items.some((task) => task.metadata.labels?.[JOB_LABEL] === jobName),
        onKube,
      );
      let reported = "";
      while (Date.now() - startedAt < FAULT_MS) {
        const cluster = await hub.store.get<Cluster>("Cluster", undefined, "cold");
        const tasks = (await hub.store.list("Task")).items.filter(
          (task) => task.metadata.labels?.[JOB_LABEL] === jobName,
        );
        const shown = JSON.stringify([cluster?.status, tasks.map((task) => task.status)]);
        if (fault.reported?.test(shown)) reported = shown;
        t.equal(
          cluster?.status?.phase,
          "Online",
          "the cluster stays Online: the agent's tunnel is not the API server",
        );
        await new Promise((resolve) => setTimeout(resolve, 5000));
      }
      if (fault.reported) t.ok(reported, `the hub shows the API server's refusal (${fault.reported})`);
      await fault.end();
      on = false;
      const endedAt = Date.now();

      const all = await waitFor(
        `job ${jobName}'s Deployment once ${fault.what} is over`,
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
        new Date(fresh[0]?.metadata?.creationTimestamp ?? 0).getTime() >= endedAt - 1000,
        `made after ${fault.what} was over: the apply waited for it`,
      );
      for (const [name, uid] of made) {
        const kept = ofJob(all, name);
        t.equal(kept.length, 1, `job ${name}'s Deployment is still one`);
        t.equal(kept[0]?.metadata?.uid, uid, `job ${name}'s Deployment neither made again nor replaced`);
      }
      made.set(jobName, fresh[0]?.metadata?.uid);
    };
    const frozen = (name: string): Fault => {
      const pid = pidOf(name);
      return {
        what: `${name} frozen`,
        begin: () => {
          process.kill(pid, "SIGSTOP");
        },
        end: () => {
          process.kill(pid, "SIGCONT");
        },
      };
    };

    /**
     * etcd's disk full as the API server meets it: the backend quota reached (NOSPACE alarm), so
     * every write fails with "database space exceeded" until an operator frees space (the filler
     * deleted, compacted, defragmented) and disarms the alarm. A real full disk is not used: etcd
     * preallocates its WAL in 64 MiB segments, so when it fills is not a test's to choose.
     */
    const etcdFull = (t: Test): Fault => {
      const core = kc.makeApiClient(CoreV1Api);
      const gateway = (path: string, body: unknown) =>
        fetch(`${etcd.origin}/v3/${path}`, { method: "POST", body: JSON.stringify(body) }).then(async (r) => {
          if (!r.ok) throw new Error(`etcd ${path}: ${r.status} ${await r.text()}`);
          return (await r.json()) as Record<string, unknown>;
        });
      const fillers: string[] = [];
      let fillerNamespace = "";
      return {
        what: "the space freed",
        reported: /space exceeded/,
        async begin() {
          const status = await gateway("maintenance/status", {});
          const quota = Number(status.dbSize) + 24 * 1024 * 1024;
          await killAndRestart(dir, "etcd", 0, (args) => [
            ...args.filter((arg) => !arg.startsWith("--quota-backend-bytes=")),
            `--quota-backend-bytes=${quota}`,
          ]);
          await waitFor(
            "etcd back with its quota",
            () =>
              gateway("maintenance/status", {}).then(
                () => true,
                () => false,
              ),
            onKube,
          );
          fillerNamespace = await testNamespace(t, kc, "filler");
          const data = { blob: "x".repeat(900_000) };
          for (let i = 0; ; i++) {
            if (i > 200) throw new Error("etcd took 200 ConfigMaps of 900 kB over its quota");
            const name = `filler-${i}`;
            const refused = await core
              .createNamespacedConfigMap({ namespace: fillerNamespace, body: { metadata: { name }, data } })
              .then(
                () => undefined,
                (error: Error) => error.message,
              );
            if (refused === undefined) fillers.push(name);
            else if (/space exceeded/.test(refused)) break;
            else throw new Error(`filling etcd: ${refused}`);
          }
        },
        async end() {
          for (const name of fillers.splice(0))
            await core.deleteNamespacedConfigMap({ name, namespace: fillerNamespace });
          const { header } = (await gateway("maintenance/status", {})) as {
            header: { revision: string; member_id: string };
          };
          await gateway("kv/compaction", { revision: header.revision, physical: true });
          await gateway("maintenance/defragment", {});
          await gateway("maintenance/alarm", {
            action: "DEACTIVATE",
            memberID: header.member_id,
            alarm: "NOSPACE",
          });
        },
      };
    };

    /** kill -9 at once; started again, with the command line it had, FAULT_MS later. */
    const killed = (name: string): Fault => {
      let restarted: Promise<void> | undefined;
      return {
        what: `${name} killed and restarted`,
        begin: () => {
          restarted = killAndRestart(dir, name, FAULT_MS);
        },
        end: () => restarted,
      };
    };

    await t.test("etcd frozen 10 s", (t) => during(t, frozen("etcd"), "b"));
    await t.test("the kube-apiserver frozen 10 s", (t) => during(t, frozen(APISERVER), "c"));
    await t.test("etcd out of space (its quota reached: NOSPACE), then freed by an operator", (t) =>
      during(t, etcdFull(t), "e"),
    );
    await t.test("the path between the kube-apiserver and etcd silent 10 s", (t) =>
      during(t, { what: "the partition", begin: () => etcdPath.freeze(), end: () => etcdPath.thaw() }, "d"),
    );
    await t.test("etcd killed with -9, restarted 10 s later", (t) => during(t, killed("etcd"), "f"));
    await t.test("the kube-apiserver killed with -9, restarted 10 s later", (t) =>
      during(t, killed(APISERVER), "g"),
    );
  },
);
