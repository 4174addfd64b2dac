import { hostname } from "node:os";
import path from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import packageJson from "../../package.json" with { type: "json" };
import type { AgentOptions, Runtime } from "../agent/index.ts";
import { findRlarkNet } from "../lib/rlark-net-path.ts";
import { parseGroupAddress } from "../lib/swim/index.ts";
import { topologyFromLabels } from "../network/pingmesh/index.ts";
import { usageError } from "./cli-error.ts";
import { parseDuration } from "./duration.ts";
import { untilSignal } from "./until-signal.ts";

export const AGENT_HELP = `
Runs an agent: dials the hub's SSH endpoint (no inbound port is opened here), receives the
Tasks placed on its cluster, runs them, and reports Nodes, Pods and Task status back.

On first start it enrolls with a one-time token from \`rlark token create --cluster <name>\`
on the hub, pinning the hub by its CA fingerprint (--ca-hash); the key and certificate are kept
in --state-dir (0600) and reused, so later starts need neither flag.

Runtimes:
  process     Raw tasks as local processes; this machine is the cluster's one node.
  kubernetes  Kubernetes tasks as Deployments, StatefulSets, DaemonSets and Jobs on the cluster
              of --kubeconfig (or the in-cluster service account), by server-side apply with the
              field manager rlark-agent; git's Node overlays are patched onto its nodes; the
              identity is kept in the Secret rlark-agent-identity of --namespace (rlark-system),
              which is created when missing. See docs/kubernetes-runtime.md and fleet/agent/ for
              running it inside the cluster.
  docker      Docker tasks as containers on the Docker engine of --docker-host, for edge
              machines with Docker and no Kubernetes; this machine is the cluster's one node and
              the engine keeps the containers running while the agent restarts; Domain pods
              get a rlark-net sidecar container and the agent's nodeserver, as root. See
              docs/docker-runtime.md.

Examples:
  rlark agent --hub hub.example.com:2222 --token rlt.… --ca-hash sha256:… --state-dir /var/lib/rlark
  rlark agent --hub hub.example.com:2222 --state-dir /var/lib/rlark --label rlark.io/city=shanghai
  rlark agent --hub hub.example.com:2222 --state-dir /var/lib/rlark --runtime docker
`;

interface AgentFlags {
  hub: string;
  token?: string;
  caHash?: string;
  stateDir: string;
  runtime: "process" | "kubernetes" | "docker";
  dockerHost: string;
  kubeconfig?: string;
  namespace: string;
  sidecarImage: string;
  nodeserverSocket: string[];
  nodeserverStatsPort?: number;
  nodeserverGroupPort?: number;
  clusterProbeInterval?: number;
  diskStatsInterval?: number;
  imagePrePull?: number;
  filesRoot?: string;
  sftpServer?: string;
  nodeName: string;
  label: Record<string, string>;
  capabilityDir: string;
  pingmesh?: string;
  nodeserverDir: string;
  nodeserverDataEngine: "node" | "go";
  domainRelay?: string;
  accessHop?: boolean;
  domainNetwork: boolean;
  podLinkCidr: string;
  sidecarUid: number;
  podUid: number;
  groupListen?: string;
  groupAdvertise?: string;
  groupJoin: string[];
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function absolutePath(value: string): string {
  if (!value.startsWith("/") || value.split("/").includes(".."))
    throw new InvalidArgumentError(`"${value}" is not an absolute path without ..`);
  return value;
}

function seconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`"${value}" is not a number of seconds`);
  return n;
}

function uid(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 2 ** 31 - 1)
    throw new InvalidArgumentError(`"${value}" is not a uid above 0`);
  return n;
}

function podUid(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 2 ** 31 - 1)
    throw new InvalidArgumentError(`"${value}" is not a uid`);
  return n;
}

/** Pulls at once for image pre-pull: 0 (off) to 16, a bound on what one agent asks of its nodes. */
function pullCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 16)
    throw new InvalidArgumentError(`"${value}" is not a number of pulls from 0 (off) to 16`);
  return n;
}

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError(`"${value}" is not a port`);
  return n;
}

/** A flag's ipv4:port, refused before anything starts. */
function groupAddress(flag: string) {
  return (value: string): string => {
    try {
      parseGroupAddress(value, flag);
    } catch (error) {
      throw new InvalidArgumentError((error as Error).message);
    }
    return value;
  };
}

function collectGroupAddress(value: string, previous: string[]): string[] {
  return [...previous, groupAddress("--group-join")(value)];
}

function collectLabel(value: string, previous: Record<string, string>): Record<string, string> {
  const eq = value.indexOf("=");
  if (eq <= 0) throw new InvalidArgumentError(`"${value}" is not key=value`);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

export function registerAgent(program: Command): void {
  program
    .command("agent")
    .description("run an agent that serves one cluster or machine for the hub")
    .requiredOption(
      "--hub <host:port>",
      "the hub's SSH endpoint; several hubs (one leads) comma-separated: a:2222,b:2222",
    )
    .option("--token <token>", "one-time bootstrap token (first start only)")
    .option("--ca-hash <sha256:hex>", "the hub CA's fingerprint to pin (first start only)")
    .option("--state-dir <dir>", "where the agent keeps its credentials and process state", ".rlark-agent")
    .addOption(
      new Option("--runtime <runtime>", "how tasks run")
        .choices(["process", "kubernetes", "docker"])
        .default("process"),
    )
    .option(
      "--kubeconfig <file>",
      "kubernetes runtime: the cluster to serve (default: in-cluster credentials)",
    )
    .option(
      "--namespace <name>",
      "kubernetes runtime: the agent's namespace (identity Secret, Tasks that name none); created when missing",
      "rlark-system",
    )
    .option(
      "--sidecar-image <image>",
      "kubernetes runtime: the image of the network init container and sidecar injected into pods of Tasks with a domain",
      `rlark/sidecar:${packageJson.version}`,
    )
    .option(
      "--nodeserver-socket <path>",
      "a nodeserver's unix socket whose GET /stats the hub's Domain page shows (repeatable)",
      collect,
      [],
    )
    .option(
      "--nodeserver-stats-port <port>",
      "kubernetes runtime: poll GET /stats of the nodeserver on every node's InternalIP at this port (its --stats-listen), with a token handed over in the peers Secret; 0: never (default 5701)",
      port,
    )
    .option(
      "--cluster-probe-interval <duration>",
      "process runtime with Domain networking: how often its nodeserver probes each other cluster of its Domains through the hub's relay (PingMesh between clusters); 0s: never (default 10s)",
      parseDuration,
    )
    .option(
      "--nodeserver-group-port <port>",
      "kubernetes runtime: the UDP port of the nodeservers' AgentGroup members (their --group-listen); the peers Secret carries the group key and the nodes as seeds, and the agent reports the group from their GET /group; 0: no group (default 7946)",
      port,
    )
    .option(
      "--disk-stats-interval <seconds>",
      "kubernetes runtime: read each node's disk use from its kubelet this often (needs nodes/proxy get)",
      seconds,
    )
    .option(
      "--image-pre-pull <pulls>",
      "kubernetes and docker runtimes: pull the images of the Tasks placed on a node onto it ahead of their pods, this many at a time; 0 turns it off (default 2; docs/adr/0012-image-pre-pull.md)",
      pullCount,
    )
    .option(
      "--files-root <dir>",
      "kubernetes and docker runtimes: the SFTP policy root in every container, an absolute path (default: the container's working directory, or /)",
      absolutePath,
    )
    .option(
      "--sftp-server <path>",
      "kubernetes and docker runtimes: where OpenSSH's sftp-server is in the images, tried before the usual paths",
      absolutePath,
    )
    .option(
      "--docker-host <url>",
      "docker runtime: the engine's API, unix:///path or tcp://host:port",
      process.env.DOCKER_HOST ?? "unix:///var/run/docker.sock",
    )
    .option("--node-name <name>", "the node name this machine reports", hostname())
    .option(
      "--nodeserver-dir <dir>",
      "process and docker runtimes: where this machine's nodeserver serves DIR/nodeserver.sock (started with the first DomainPeer)",
      "/var/run/rlark",
    )
    .option(
      "--domain-relay <host:port>",
      "the hub's domain relay, named in the nodeservers' peers state for their cross-cluster traffic",
    )
    .option(
      "--access-hop",
      "process runtime: carry ssh -L bytes the hub's SSH front offers over its hop (--ssh-front-hop) in rlark-net access-hop, not in this process (ADR 0011)",
    )
    .addOption(
      new Option(
        "--nodeserver-data-engine <engine>",
        "process runtime: what carries the nodeserver's bytes between clusters: its own process (node), or rlark-net nodeserver-data (go; experimental)",
      )
        .choices(["node", "go"])
        .default("node"),
    )
    .option(
      "--no-domain-network",
      "process and docker runtimes: run pods of Tasks in a Domain on the machine's (or the engine's default) network, without namespace, sidecar or nodeserver",
    )
    .option(
      "--pod-link-cidr <cidr>",
      "process and docker runtimes: the range each Domain pod's /30 veth link to the host is cut from",
      "10.213.0.0/16",
    )
    .option(
      "--sidecar-uid <uid>",
      "process and docker runtimes: the uid (and gid) Domain pods' sidecars run as",
      uid,
      1337,
    )
    .option(
      "--pod-uid <uid>",
      "process runtime, as root: the first of 1000 uids pods run as, each Task its own (and the access sessions into its pods); not the sidecar's; 0 runs every pod as root, unconfined",
      podUid,
      1338,
    )
    .option("--label <key=value>", "a label on the reported node (repeatable)", collectLabel, {})
    .option(
      "--group-listen <ip:port>",
      "run this machine's AgentGroup member (SWIM over UDP) here; docs/diagnosis.md#agentgroup",
      groupAddress("--group-listen"),
    )
    .option(
      "--group-advertise <ip:port>",
      "the address the other members reach this one at (with --group-listen 0.0.0.0:PORT)",
      groupAddress("--group-advertise"),
    )
    .option(
      "--group-join <ip:port>",
      "a member to join the group through (repeatable)",
      collectGroupAddress,
      [],
    )
    .option(
      "--pingmesh <file>",
      "this machine's PingMesh: a JSON file with its probe port, peers and topology (docs/pingmesh.md); its figures go into every report",
    )
    .option(
      "--capability-dir <dir>",
      "where this machine's components (device plugin, controllers) write their capability states",
      "/var/run/rlark/capabilities",
    )
    .addHelpText("after", AGENT_HELP)
    .action(async (flags: AgentFlags) => {
      // Loaded here, not at the top: every `rlark` invocation would otherwise pay for them.
      const [{ startAgent }, { ProcessRuntime }, { jsonLogger }, { fileCredentialStore }] = await Promise.all(
        [
          import("../agent/index.ts"),
          import("../agent/runtimes/process/index.ts"),
          import("../lib/logger.ts"),
          import("../lib/tunnel/index.ts"),
        ],
      );
      const logger = jsonLogger("agent");
      const stateDir = path.resolve(flags.stateDir);
      let dryRun: AgentOptions["dryRun"];
      let runtime: Runtime;
      let credentials = fileCredentialStore(path.join(stateDir, "credentials.json"));
      if (flags.runtime === "kubernetes") {
        const { KubernetesRuntime, kubernetesDryRun, loadKubeConfig, secretCredentialStore } = await import(
          "../agent/runtimes/kubernetes/index.ts"
        );
        const kubeConfig = loadKubeConfig(flags.kubeconfig);
        const kubernetes = await KubernetesRuntime.start({
          kubeConfig,
          defaultNamespace: flags.namespace,
          agentVersion: packageJson.version,
          logger,
          sidecar: { image: flags.sidecarImage },
          ...(flags.diskStatsInterval ? { diskStatsIntervalMs: flags.diskStatsInterval * 1000 } : {}),
          ...(flags.imagePrePull !== undefined ? { imagePrePull: { concurrency: flags.imagePrePull } } : {}),
          files: {
            ...(flags.filesRoot ? { root: flags.filesRoot } : {}),
            ...(flags.sftpServer ? { sftpServer: flags.sftpServer } : {}),
          },
        });
        runtime = kubernetes;
        // Plans' dry-runs go through the agent's own client: the hub never reaches the API server.
        // Bundle objects are also checked against the cluster's own OpenAPI schemas.
        dryRun = kubernetesDryRun(kubeConfig, flags.namespace, (object) => kubernetes.checkSchema(object));
        // In a cluster the identity lives in a Secret, so a rescheduled agent pod stays enrolled.
        credentials = secretCredentialStore({ kubeConfig, namespace: flags.namespace });
      } else if (flags.runtime === "docker") {
        const { DockerRuntime } = await import("../agent/runtimes/docker/index.ts");
        runtime = await DockerRuntime.open({
          dockerHost: flags.dockerHost,
          nodeName: flags.nodeName,
          nodeLabels: flags.label,
          agentVersion: packageJson.version,
          ...(flags.imagePrePull !== undefined ? { imagePrePullConcurrency: flags.imagePrePull } : {}),
          logger,
          files: {
            ...(flags.filesRoot ? { root: flags.filesRoot } : {}),
            ...(flags.sftpServer ? { sftpServer: flags.sftpServer } : {}),
          },
          rlarkNet: (await import("../network/index.ts")).rlarkNetPath(),
          ...(flags.domainNetwork
            ? {
                podNetwork: {
                  linkCidr: flags.podLinkCidr,
                  rlarkNet: (await import("../network/index.ts")).rlarkNetPath(),
                  runDir: path.resolve(flags.nodeserverDir),
                  sidecarUid: flags.sidecarUid,
                },
              }
            : {}),
        });
      } else {
        runtime = await ProcessRuntime.open({
          stateDir: path.join(stateDir, "runtime"),
          nodeName: flags.nodeName,
          nodeLabels: flags.label,
          agentVersion: packageJson.version,
          logger,
          ...(flags.domainNetwork
            ? {
                podNetwork: {
                  linkCidr: flags.podLinkCidr,
                  rlarkNet: (await import("../network/index.ts")).rlarkNetPath(),
                  // this same program, as the sidecar's uid runs it
                  rlark: [process.execPath, ...(process.argv[1] ? [process.argv[1]] : [])],
                  runDir: path.resolve(flags.nodeserverDir),
                  sidecarUid: flags.sidecarUid,
                },
              }
            : {}),
          // An agent that is not root cannot give its pods another user.
          ...(process.getuid?.() === 0 && flags.podUid !== 0 ? { podUsers: { firstUid: flags.podUid } } : {}),
        });
      }
      const network =
        (flags.runtime === "process" || flags.runtime === "docker") && flags.domainNetwork
          ? (await import("./agent-network.ts")).agentNodeserver({
              dir: path.resolve(flags.nodeserverDir),
              node: flags.nodeName,
              logger,
              dataEngine: flags.nodeserverDataEngine,
              ...(flags.clusterProbeInterval === undefined
                ? {}
                : { clusterProbeIntervalMs: flags.clusterProbeInterval }),
            })
          : undefined;
      const pingMesh = flags.pingmesh
        ? await (await import("./agent-pingmesh.ts"))
            .startAgentPingMesh({
              file: path.resolve(flags.pingmesh),
              nodeName: flags.nodeName,
              nodeLabels: flags.label,
              clock: (await import("../lib/clock.ts")).systemClock,
              logger,
            })
            .catch(async (error: unknown) => {
              await runtime.stop();
              await network?.stop();
              throw error;
            })
        : undefined;
      const agent = await startAgent({
        hub: flags.hub,
        credentials,
        ...(flags.token ? { token: flags.token } : {}),
        ...(flags.caHash ? { caHash: flags.caHash } : {}),
        runtime,
        runtimeKind: flags.runtime,
        capabilityDir: path.resolve(flags.capabilityDir),
        ...(dryRun ? { dryRun } : {}),
        // the agent's own nodeserver gives the Domain page its figures too
        nodeserverSockets: [
          ...flags.nodeserverSocket.map((p) => path.resolve(p)),
          ...(network ? [network.socket] : []),
        ],
        ...(network ? { onPeersState: network.onPeersState } : {}),
        ...(flags.runtime === "kubernetes" && (flags.nodeserverStatsPort ?? 5701) > 0
          ? { nodeserverStatsPort: flags.nodeserverStatsPort ?? 5701 }
          : {}),
        ...(flags.runtime === "kubernetes" && (flags.nodeserverGroupPort ?? 7946) > 0
          ? { nodeserverGroupPort: flags.nodeserverGroupPort ?? 7946 }
          : {}),
        ...(flags.domainRelay ? { domainRelay: flags.domainRelay } : {}),
        ...(flags.accessHop ? { accessHop: accessHopBinary() } : {}),
        ...(flags.groupListen
          ? {
              group: {
                id: flags.nodeName,
                listen: flags.groupListen,
                ...(flags.groupAdvertise ? { advertise: flags.groupAdvertise } : {}),
                join: flags.groupJoin,
              },
            }
          : {}),
        ...(pingMesh ? { pingMesh: pingMesh.status } : {}),
        // the nodeservers' PingMesh of their group (docs/pingmesh.md#nodeservers), labelled by the Nodes
        ...(flags.runtime === "kubernetes" ? { nodeTopology: topologyFromLabels } : {}),
        logger,
      }).catch(async (error: unknown) => {
        // the runtime's watches would keep the process alive after the error is printed
        await runtime.stop();
        await network?.stop();
        await pingMesh?.stop();
        throw error;
      });
      logger.info("agent started", { cluster: agent.cluster, hub: flags.hub });
      await untilSignal();
      await agent.stop();
      await network?.stop();
      await pingMesh?.stop();
    });
}

/** `--access-hop`'s rlark-net: RLARK_NET_BIN, the built one, or PATH's. */
function accessHopBinary(): string {
  const binary = findRlarkNet();
  if (!binary)
    throw usageError(
      "--access-hop needs rlark-net (RLARK_NET_BIN, PATH; hack/network/build-rlark-net builds it)",
    );
  return binary;
}
