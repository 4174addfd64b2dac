// The Domain page's figures for a kubernetes cluster (hack/kube, kwok nodes, as root): the
// kubernetes agent polls every node's nodeserver at the node's InternalIP over TCP with a bearer
// token it hands the nodeservers in the peers Secret, and the hub stores what they say as the
// DomainPeer's status.traffic. The node's nodeserver is a real `rlark nodeserver --peers-secret
// --stats-listen` process in a network namespace holding that node's InternalIP (routed from the
// host), reaching the API server through a unix-socket bridge. Without the token: 401.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import t from "tap";
import type { DomainPeer } from "../../../operators/api/index.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { clusterYaml, domainYaml, jobYaml, trainerTaskYaml } from "../../helpers/job-yaml.ts";
import { startKubernetesAgentOnHub } from "../../helpers/kubernetes-agent-on-hub.ts";
import { startSecretNodeserver } from "../../helpers/nodeserver-process.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc, kubeconfig: kubeconfigFile, server } = fleetCluster(0);
const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: "utf8", stdio: "pipe" });

function repository(namespace: string): Record<string, string> {
  return {
    "clusters.yaml": clusterYaml("gpu", "kubernetes"),
    "domain.yaml": domainYaml("lab", "10.0.9.0/24"),
    "net.yaml": jobYaml(
      "net",
      [trainerTaskYaml({ namespace, replicas: 1, resources: `{ requests: { cpu: "100m" } }` })],
      { domain: "lab" },
    ),
  };
}

t.test("the kubernetes agent reads its nodeservers' /stats by node IP with its token", async (t) => {
  const namespace = await testNamespace(t, kc, "domain-stats");
  const core = kc.makeApiClient(CoreV1Api);
  const nodes = (await core.listNode()).items;
  const nodeIP = nodes[0]?.status?.addresses?.find((a) => a.type === "InternalIP")?.address;
  if (!nodeIP) throw new Error("the fleet's first node has no InternalIP");
  const statsPort = 20_000 + ((randomBytes(2).readUInt16BE(0) % 20_000) as number);

  // the node: a namespace holding its InternalIP, routed from the host
  const id = randomBytes(3).toString("hex");
  const netns = `rkst${id}`;
  const [hostIf, podIf] = [`rkst${id}h`, `rkst${id}p`];
  const link = `10.${200 + ((randomBytes(1)[0] ?? 0) % 50)}.${randomBytes(1)[0] ?? 0}`;
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-domain-stats-"));
  const children: ChildProcess[] = [];
  t.teardown(async () => {
    for (const child of children.reverse()) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    for (const cmd of [
      ["ip", "route", "del", `${nodeIP}/32`, "via", `${link}.2`],
      ["ip", "link", "del", hostIf],
      ["ip", "netns", "del", netns],
    ])
      try {
        sh(cmd[0] as string, cmd.slice(1));
      } catch {}
    rmSync(dir, { recursive: true, force: true });
  });
  sh("ip", ["netns", "add", netns]);
  sh("ip", ["link", "add", hostIf, "type", "veth", "peer", "name", podIf]);
  sh("ip", ["link", "set", podIf, "netns", netns]);
  sh("ip", ["addr", "add", `${link}.1/30`, "dev", hostIf]);
  sh("ip", ["link", "set", hostIf, "up"]);
  const inNs = (args: string[]) => sh("ip", ["-n", netns, ...args]);
  inNs(["link", "set", "lo", "up"]);
  inNs(["addr", "add", `${link}.2/30`, "dev", podIf]);
  inNs(["addr", "add", `${nodeIP}/32`, "dev", "lo"]);
  inNs(["link", "set", podIf, "up"]);
  inNs(["route", "add", "default", "via", `${link}.1`]);
  sh("ip", ["route", "add", `${nodeIP}/32`, "via", `${link}.2`]);
  // the API server listens on the host's loopback: a bridge through a unix socket
  const apiPort = new URL(server).port;
  const bridge = path.join(dir, "api.sock");
  const spawnQuiet = (cmd: string, args: string[]) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "ignore", "pipe"] });
    child.stderr?.resume();
    children.push(child);
    return child;
  };
  spawnQuiet("socat", [`UNIX-LISTEN:${bridge},fork`, `TCP:127.0.0.1:${apiPort}`]);
  await waitFor("the bridge's socket", () => sh("ls", [dir]).includes("api.sock"), onKube);
  spawnQuiet("ip", [
    "netns",
    "exec",
    netns,
    "socat",
    `TCP-LISTEN:${apiPort},bind=127.0.0.1,fork,reuseaddr`,
    `UNIX-CONNECT:${bridge}`,
  ]);
  const socketDir = path.join(dir, "run");
  startSecretNodeserver(t, {
    socketDir,
    namespace,
    kubeconfig: kubeconfigFile,
    statsListen: `0.0.0.0:${statsPort}`,
    netns,
  });

  const { hub } = await startHubOnGit(t, { files: repository(namespace) });
  await waitFor(
    "the Domain from git",
    async () => (await hub.store.get("Domain", undefined, "lab")) ?? undefined,
    onKube,
  );
  await startKubernetesAgentOnHub(t, hub, "gpu", {
    kubeConfig: kc,
    namespace,
    reportIntervalMs: 1_000,
    nodeserverStatsPort: statsPort,
    statsIntervalMs: 200,
  });

  const traffic = await waitFor(
    "the DomainPeer's status.traffic from the node's nodeserver",
    async () => (await hub.store.get<DomainPeer>("DomainPeer", "agent-gpu", "lab"))?.status?.traffic,
    onKube,
  );
  t.equal(traffic.poolConnections, 0, "its figures: no pool connection yet");
  t.same(traffic.pairs, [], "and no pair");
  t.match(traffic.observedAt, /^\d{4}-\d\d-\d\dT/, "with the time they were read");

  const status = (headers: string[]) =>
    sh("curl", [
      "-s",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code}",
      ...headers,
      `http://${nodeIP}:${statsPort}/stats`,
    ]);
  t.equal(status([]), "401", "no token: refused");
  t.equal(status(["-H", "authorization: Bearer forged"]), "401", "a wrong token: refused");
});
