// The hub killed with SIGKILL while an agent runs a task: restarted on the same data dir and
// address, it gets the agent back (the agent reconnects by itself), keeps the Job Running and
// starts nothing twice.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { createGitServer } from "../../helpers/git-server.ts";
import { pidsMarked } from "../../helpers/marked-processes.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const cli = path.resolve(import.meta.dirname, "../../../operators/cli/main.ts");
const marker = `rlark-hubkill-${process.pid}`;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const markedPids = () => pidsMarked(marker);

const marked = async () => (await markedPids()).length;

t.test("a hub killed with SIGKILL and restarted gets its agent back without duplicates", async (t) => {
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
  const dataDir = await mkdtemp(path.join(tmpdir(), "rlark-hubkill-"));
  const [httpPort, sshPort] = [await freePort(), await freePort()];
  const hubUrl = `http://127.0.0.1:${httpPort}`;
  const children: ChildProcess[] = [];
  t.teardown(async () => {
    for (const child of children) child.kill("SIGKILL");
    // The agent leaves Deployment-kind processes running for its successor; this test has none.
    for (const pid of await markedPids()) {
      for (const target of [-pid, pid]) {
        try {
          // The runtime starts each pod as its own process group: the group takes the sleep too.
          process.kill(target, "SIGKILL");
        } catch {
          // not a group leader, or already gone
        }
      }
    }
  });
  const run = (args: string[]) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "ignore", "ignore"] });
    children.push(child);
    return child;
  };
  const startHubProcess = () =>
    run([
      "hub",
      "--repo",
      git.fileUrl,
      "--branch",
      git.branch,
      "--interval",
      "200ms",
      "--data-dir",
      dataDir,
      "--http",
      `127.0.0.1:${httpPort}`,
      "--ssh",
      `127.0.0.1:${sshPort}`,
      "--no-status-commits",
      "--no-dashboard",
    ]);
  const api = async (route: string) => {
    const token = (await readFile(path.join(dataDir, "admin-token"), "utf8").catch(() => "")).trim();
    const response = await fetch(`${hubUrl}${route}`, {
      headers: { authorization: `Bearer ${token}` },
    }).catch(() => undefined);
    return response?.ok ? ((await response.json()) as { status?: Record<string, unknown> }) : undefined;
  };
  const clusterStatus = async () => (await api("/api/v1/rlinf.io/v1alpha1/clusters/local"))?.status;
  const jobPhase = async () => (await api("/api/v1/rlinf.io/v1alpha1/jobs/svc"))?.status?.phase;

  let hub = startHubProcess();
  await waitFor(
    "hub up",
    async () => (await clusterStatus()) !== undefined || (await api("/api/v1/source")) !== undefined,
    {
      ...onRealServers,
      attempts: 1200,
    },
  );
  await waitFor(
    "cluster applied",
    async () => (await api("/api/v1/rlinf.io/v1alpha1/clusters/local")) !== undefined,
    {
      ...onRealServers,
      attempts: 1200,
    },
  );
  // The operator's way: `rlark token create` against the running hub's data dir.
  const created = await new Promise<string>((resolve) => {
    let out = "";
    const create = spawn(process.execPath, [
      cli,
      "token",
      "create",
      "--cluster",
      "local",
      "--data-dir",
      dataDir,
    ]);
    create.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    create.on("exit", () => resolve(out));
  });
  const token = /token:\s+(\S+)/.exec(created)?.[1] as string;
  const fingerprint = /ca-hash:\s+(\S+)/.exec(created)?.[1] as string;
  const stateDir = await mkdtemp(path.join(tmpdir(), "rlark-hubkill-agent-"));
  run([
    "agent",
    "--hub",
    `127.0.0.1:${sshPort}`,
    "--token",
    token,
    "--ca-hash",
    fingerprint,
    "--state-dir",
    stateDir,
  ]);
  await waitFor("job Running", async () => (await jobPhase()) === "Running", {
    ...onRealServers,
    attempts: 2400,
  });
  const perReplica = await marked();
  t.ok(perReplica > 0, "the task runs");

  hub.kill("SIGKILL");
  await new Promise((resolve) => hub.once("exit", resolve));
  await waitFor("hub gone", async () => (await api("/healthz")) === undefined, onRealServers);
  hub = startHubProcess();
  await waitFor(
    "agent back",
    async () => (await clusterStatus())?.phase === "Online" && (await jobPhase()) === "Running",
    {
      ...onRealServers,
      attempts: 2400,
    },
  );
  t.equal(await marked(), perReplica, "the agent kept its process and started no second one");
  const bootAfter = (await clusterStatus())?.bootId;
  t.ok(bootAfter, "the reconnected agent said hello to the new hub");
});
