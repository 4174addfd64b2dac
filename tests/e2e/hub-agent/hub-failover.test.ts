// Two hubs on the kubernetes store of one real apiserver: one leads by the Lease, the other
// stands by (serves reads, /readyz 503, no tunnel). kill -9 of the leader: the standby leads,
// the agent (given both addresses) reconnects by itself, and nothing is lost or doubled.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { testNamespace } from "../../helpers/fleet.ts";
import { createGitServer } from "../../helpers/git-server.ts";
import { kubeStoreFixture } from "../../helpers/kube-store.ts";
import { pidsMarked } from "../../helpers/marked-processes.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const cli = path.resolve(import.meta.dirname, "../../../operators/cli/main.ts");
const marker = `rlark-failover-${process.pid}`;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

interface HubProcess {
  name: string;
  dataDir: string;
  http: number;
  ssh: number;
  child?: ChildProcess;
}

t.test(
  "kill -9 of the leading hub: the standby leads, the agent follows, nothing lost or doubled",
  async (t) => {
    const fixture = await kubeStoreFixture(t);
    const namespace = await testNamespace(t, fixture.kubeConfig, "ha");
    const git = await createGitServer();
    t.teardown(() => git.close());
    await git.commit({
      "cluster.yaml":
        "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: local\nspec:\n  runtime: process\n",
      "job.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: svc
spec:
  tasks:
    - name: main
      role: Env
      agentType: Raw
      raw:
        kind: Deployment
        command: ["sh", "-c", "sleep 300; true # ${marker}"]
`,
    });
    const children: ChildProcess[] = [];
    t.teardown(async () => {
      for (const child of children) child.kill("SIGKILL");
      for (const pid of await pidsMarked(marker)) {
        for (const target of [-pid, pid]) {
          try {
            process.kill(target, "SIGKILL");
          } catch {
            // not a group leader, or already gone
          }
        }
      }
    });
    const run = (args: string[]) => {
      const child = spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "pipe", "pipe"] });
      child.stdout?.on("data", (c: Buffer) => process.stderr.write(`[${args[0]}] ${c}`));
      child.stderr?.on("data", (c: Buffer) => process.stderr.write(`[${args[0]}!] ${c}`));
      children.push(child);
      return child;
    };
    const hubs: HubProcess[] = [];
    for (const name of ["a", "b"]) {
      hubs.push({
        name,
        dataDir: await mkdtemp(path.join(tmpdir(), `rlark-failover-${name}-`)),
        http: await freePort(),
        ssh: await freePort(),
      });
    }
    const [a, b] = hubs as [HubProcess, HubProcess];
    const start = (hub: HubProcess, caDir?: string) => {
      hub.child = run([
        "hub",
        ...["--repo", git.fileUrl, "--branch", git.branch, "--interval", "200ms"],
        ...["--data-dir", hub.dataDir, "--http", `127.0.0.1:${hub.http}`, "--ssh", `127.0.0.1:${hub.ssh}`],
        ...(caDir ? ["--ca-dir", caDir] : []),
        ...["--store", "kubernetes", "--kubeconfig", fixture.kubeconfigFile, "--namespace", namespace],
        ...["--crd-group", fixture.group, "--no-status-commits", "--no-dashboard"],
      ]);
    };
    const get = async (hub: HubProcess, route: string) => {
      const token = (await readFile(path.join(hub.dataDir, "admin-token"), "utf8").catch(() => "")).trim();
      return fetch(`http://127.0.0.1:${hub.http}${route}`, {
        headers: { authorization: `Bearer ${token}` },
      }).catch(() => undefined);
    };
    const api = async (hub: HubProcess, route: string) => {
      const response = await get(hub, route);
      return response?.ok
        ? ((await response.json()) as { status?: Record<string, unknown>; items?: unknown[] })
        : undefined;
    };
    const ready = async (hub: HubProcess) => (await get(hub, "/readyz"))?.status;

    start(a);
    await waitFor("hub a leads", async () => (await ready(a)) === 200, { ...onRealServers, attempts: 1200 });
    // b shares a's CA (as replicas share a mounted Secret), so agents trust either.
    start(b, path.join(a.dataDir, "pki"));
    await waitFor("hub b serves, as a standby", async () => (await ready(b)) === 503, {
      ...onRealServers,
      attempts: 1200,
    });
    t.ok(await api(b, "/api/v1/rlinf.io/v1alpha1/clusters/local"), "the standby serves the read API");

    const created = await new Promise<string>((resolve) => {
      let out = "";
      const create = spawn(process.execPath, [
        cli,
        "token",
        "create",
        "--cluster",
        "local",
        "--data-dir",
        a.dataDir,
      ]);
      create.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
      });
      create.on("exit", () => resolve(out));
    });
    t.match(created, /ca-hash:/, "a bootstrap token from the leader's data dir");
    const token = /token:\s+(\S+)/.exec(created)?.[1] as string;
    const fingerprint = /ca-hash:\s+(\S+)/.exec(created)?.[1] as string;
    const stateDir = await mkdtemp(path.join(tmpdir(), "rlark-failover-agent-"));
    run([
      "agent",
      ...["--hub", `127.0.0.1:${a.ssh},127.0.0.1:${b.ssh}`],
      ...["--token", token, "--ca-hash", fingerprint, "--state-dir", stateDir],
    ]);
    const jobPhase = async (hub: HubProcess) =>
      (await api(hub, "/api/v1/rlinf.io/v1alpha1/jobs/svc"))?.status?.phase;
    const clusterStatus = async (hub: HubProcess) =>
      (await api(hub, "/api/v1/rlinf.io/v1alpha1/clusters/local"))?.status;
    await waitFor("the job Running", async () => (await jobPhase(a)) === "Running", {
      ...onRealServers,
      attempts: 2400,
    });
    const processes = (await pidsMarked(marker)).length;
    t.ok(processes > 0, "the task runs");
    const tasksBefore = (await api(b, "/api/v1/rlinf.io/v1alpha1/tasks"))?.items?.length;
    t.ok(tasksBefore, "the standby sees the leader's Tasks");
    const bootBefore = (await clusterStatus(b))?.bootId;

    a.child!.kill("SIGKILL");
    const killedAt = Date.now();
    await waitFor("hub b leads", async () => (await ready(b)) === 200, { ...onRealServers, attempts: 1200 });
    t.comment(`hub b led ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);
    await waitFor(
      "the agent back on hub b",
      async () => {
        const status = await clusterStatus(b);
        return status?.phase === "Online" && status.bootId !== undefined && (await jobPhase(b)) === "Running";
      },
      { ...onRealServers, attempts: 2400 },
    );
    t.ok(bootBefore, "the agent had said hello to hub a");
    t.equal((await pidsMarked(marker)).length, processes, "no process started twice");
    t.equal(
      (await api(b, "/api/v1/rlinf.io/v1alpha1/tasks"))?.items?.length,
      tasksBefore,
      "no Task doubled or lost",
    );
    t.ok(await api(b, "/api/v1/rlinf.io/v1alpha1/jobs/svc"), "no object lost");
  },
);
