// `rlark agent --runtime kubernetes` as a user runs it, a real process against a real hub and a
// hack/kube cluster: on a cluster without its namespace it makes the namespace, keeps its
// identity there and reports the real versions and node count; when its RBAC may not make the
// namespace, it says so in one line, before its token is spent. Cluster 1 of the fleet: the
// other agent tests use cluster 0, and this agent prunes what carries no instance label.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api, VersionApi } from "@kubernetes/client-node";
import t, { type Test } from "tap";
import { repoRoot } from "../../../hack/kube/paths.ts";
import packageJson from "../../../package.json" with { type: "json" };
import { fleetCluster, within } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const cluster = fleetCluster(1);
const kc = cluster.kubeConfig;
const core = kc.makeApiClient(CoreV1Api);

const MAX_OUTPUT = 1 << 20;

interface Running {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Starts `rlark agent …`; its stdout and stderr are kept together (bounded). */
function rlarkAgent(t: Test, args: string[]): Running {
  const child = spawn(process.execPath, [path.join(repoRoot, "operators/cli/main.ts"), "agent", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const keep = (chunk: Buffer) => {
    if (output.length < MAX_OUTPUT) output += chunk.toString("utf8");
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = once(child, "exit").then(([code]) => code as number | null);
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await exited;
    }
  });
  return { child, output: () => output, exited };
}

async function deleteNamespaceAfter(t: Test, name: string): Promise<void> {
  t.teardown(() => core.deleteNamespace({ name }).catch(() => undefined));
}

t.test(
  "an agent for a cluster without its namespace creates it, enrolls and reports real figures",
  async (t) => {
    const namespace = `rlark-agent-cli-${randomBytes(4).toString("hex")}`;
    await deleteNamespaceAfter(t, namespace);
    const { hub } = await startHubOnGit(t, {
      files: {
        "clusters.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: fresh
spec:
  runtime: kubernetes
`,
      },
    });
    await waitFor(
      "the Cluster from git",
      async () => (await hub.store.get("Cluster", undefined, "fresh")) ?? undefined,
      onKube,
    );
    const { token } = await hub.pki.enrollment.createToken({ cluster: "fresh", ttlMs: 120_000 });

    const agent = rlarkAgent(t, [
      "--hub",
      hub.sshAddress,
      "--token",
      token,
      "--ca-hash",
      hub.caFingerprint,
      "--runtime",
      "kubernetes",
      "--kubeconfig",
      cluster.kubeconfig,
      "--namespace",
      namespace,
      "--state-dir",
      await mkdtemp(path.join(tmpdir(), "rlark-agent-cli-state-")),
    ]);
    const secret = await waitFor(
      "the identity Secret in the new namespace",
      async () => {
        if (agent.child.exitCode !== null) throw new Error(`the agent exited: ${agent.output()}`);
        return await core
          .readNamespacedSecret({ name: "rlark-agent-identity", namespace })
          .catch(() => undefined);
      },
      onKube,
    );
    t.equal(secret.type, "kubernetes.io/tls");
    t.equal(Buffer.from(secret.data?.cluster ?? "", "base64").toString(), "fresh");

    const { gitVersion } = await kc.makeApiClient(VersionApi).getCode();
    const nodes = (await core.listNode()).items.length;
    const status = await waitFor(
      "the Cluster's status with the agent's figures",
      async () => {
        const s = (await hub.store.get("Cluster", undefined, "fresh"))?.status as
          | { agentVersion?: string; kubernetesVersion?: string; nodeCount?: number }
          | undefined;
        return s?.kubernetesVersion && s.nodeCount === nodes ? s : undefined;
      },
      onKube,
    );
    t.equal(status.agentVersion, packageJson.version, "agentVersion is the package's version");
    t.equal(status.kubernetesVersion, gitVersion, "kubernetesVersion is the API server's gitVersion");
    t.equal(status.nodeCount, nodes, "nodeCount is the cluster's node count");
    const reported = await hub.store.list("Node", { namespace: "agent-fresh" });
    t.equal(reported.items.length, nodes);
    for (const node of reported.items)
      t.equal(
        (node.status as { nodeInfo?: { agentVersion?: string } }).nodeInfo?.agentVersion,
        packageJson.version,
        `${node.metadata.name} carries the agent's version`,
      );

    agent.child.kill("SIGTERM");
    await agent.exited;
    t.notMatch(agent.output(), /HTTP-Code|Headers/, "no raw HTTP dump in the agent's output");
  },
);

t.test("an agent that may not create its namespace refuses in one line and keeps its token", async (t) => {
  const suffix = randomBytes(4).toString("hex");
  const namespace = `rlark-agent-cli-${suffix}`;
  const user = `rlark-test-no-namespaces-${suffix}`;
  // everything the runtime reads at start, and Secrets, but not namespaces/create
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createClusterRole({
    body: {
      metadata: { name: user, labels: { "rlark.io/test": "true" } },
      rules: [
        { apiGroups: [""], resources: ["nodes", "pods", "persistentvolumeclaims"], verbs: ["list", "watch"] },
        {
          apiGroups: ["apps"],
          resources: ["deployments", "statefulsets", "daemonsets"],
          verbs: ["list", "watch"],
        },
        { apiGroups: ["batch"], resources: ["jobs"], verbs: ["list", "watch"] },
        { apiGroups: ["storage.k8s.io"], resources: ["storageclasses"], verbs: ["list", "watch"] },
        { apiGroups: [""], resources: ["namespaces", "secrets"], verbs: ["get"] },
      ],
    },
  });
  t.teardown(() => rbac.deleteClusterRole({ name: user }).catch(() => undefined));
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: user, labels: { "rlark.io/test": "true" } },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: user },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
    },
  });
  t.teardown(() => rbac.deleteClusterRoleBinding({ name: user }).catch(() => undefined));
  const restricted = new KubeConfig();
  const admin = kc.getCurrentUser();
  const server = kc.getCurrentCluster();
  if (!admin || !server) throw new Error("the fleet kubeconfig has no current user or cluster");
  restricted.loadFromOptions({
    clusters: [server],
    users: [{ ...admin, name: "restricted", impersonateUser: user }],
    contexts: [{ name: "restricted", cluster: server.name, user: "restricted" }],
    currentContext: "restricted",
  });
  const kubeconfig = path.join(await mkdtemp(path.join(tmpdir(), "rlark-agent-cli-kc-")), "kubeconfig");
  await writeFile(kubeconfig, restricted.exportConfig(), { mode: 0o600 });

  const agent = rlarkAgent(t, [
    "--hub",
    "127.0.0.1:9",
    "--token",
    "rlt.unused",
    "--ca-hash",
    `sha256:${"0".repeat(64)}`,
    "--runtime",
    "kubernetes",
    "--kubeconfig",
    kubeconfig,
    "--namespace",
    namespace,
  ]);
  const code = await within("the agent's exit", agent.exited, 60_000).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; its output: ${agent.output()}`);
  });
  t.equal(code, 1, "the agent exits 1");
  const lines = agent
    .output()
    .split("\n")
    .filter((l) => l.startsWith("rlark agent:"));
  t.equal(lines.length, 1, "one error line");
  t.match(
    lines[0],
    `rlark agent: the Namespace ${namespace} does not exist and this agent may not create it`,
  );
  t.match(lines[0], /403 Forbidden/);
  t.match(lines[0], `kubectl create namespace ${namespace}`);
  t.notMatch(agent.output(), /HTTP-Code|Headers|Body:/, "no raw HTTP dump");
  const exists = await core.readNamespace({ name: namespace }).then(
    () => true,
    () => false,
  );
  t.equal(exists, false, "nothing was created");
});
