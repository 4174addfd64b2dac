// `rlark nodeserver` and `rlark sidecar`: the Domain data path's two in-cluster processes
// (docs/networking.md).

import { mkdirSync } from "node:fs";
import { type Command, InvalidArgumentError, Option } from "commander";
import type { PeersState } from "../api/index.ts";
import { systemClock } from "../lib/clock.ts";
import { jsonLogger } from "../lib/logger.ts";
import { parseGroupAddress } from "../lib/swim/index.ts";
import type { NodeserverGroup } from "../network/index.ts";
import { usageError } from "./cli-error.ts";
import { parseDuration } from "./duration.ts";
import { untilSignal } from "./until-signal.ts";

function port(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 65535)
    throw usageError(`${name}=${JSON.stringify(value)} is not a port`);
  return n;
}

export function registerNodeserver(program: Command): void {
  program
    .command("nodeserver")
    .description("route the Domain traffic of this node's pods (one per node; see docs/networking.md)")
    .requiredOption(
      "--socket-dir <dir>",
      "where nodeserver.sock is served (and peers.json is read, without --peers-secret)",
    )
    .option(
      "--peers-secret <namespace/name>",
      "read the peers state from this Secret (the kubernetes agent's rlark-domain-peers), watched through the API server",
    )
    .option("--kubeconfig <file>", "with --peers-secret: the API server (default: in-cluster credentials)")
    .option("--node <name>", "this node's name, told to the hub", process.env.RLARK_NODE_NAME)
    .option(
      "--stats-listen <host:port>",
      "also serve GET /stats over TCP, to the bearer of the peers state's statsToken (the kubernetes agent polls it)",
    )
    .option(
      "--cluster-probe-interval <duration>",
      "how often each other cluster of this node's Domains is probed through the hub's relay (PingMesh between clusters); 0s: never",
      parseDuration,
      10_000,
    )
    .option(
      "--group-listen <ip:port>",
      "join the cluster's AgentGroup (SWIM over UDP) here, with the key and seeds of the peers state's group; docs/diagnosis.md#agentgroup",
      groupAddress("--group-listen"),
    )
    .option(
      "--group-advertise <ip:port>",
      "the address the other nodes reach this member at (with --group-listen 0.0.0.0:PORT)",
      groupAddress("--group-advertise"),
    )
    .option(
      "--group-pingmesh-interval <duration>",
      "with --group-listen: probe the group's members by TCP connect to their group address this often (GET /pingmesh on --stats-listen); 0s: never",
      parseDuration,
      10_000,
    )
    .option(
      "--group-pingmesh-budget <n>",
      "with --group-listen: members probed at most, so probes per interval (docs/pingmesh.md)",
      budgetArg,
      16,
    )
    .option(
      "--idle-timeout <duration>",
      "close a pooled hub connection idle this long",
      parseDuration,
      86_400_000,
    )
    .addOption(
      new Option(
        "--data-engine <engine>",
        "what carries the bytes between clusters: this process (node), or rlark-net nodeserver-data (go: crypto/tls, which this process starts and restarts; experimental)",
      )
        .choices(["node", "go"])
        .default("node"),
    )
    .action(
      async (options: {
        socketDir: string;
        dataEngine: "node" | "go";
        node?: string;
        idleTimeout: number;
        peersSecret?: string;
        kubeconfig?: string;
        statsListen?: string;
        groupListen?: string;
        groupAdvertise?: string;
        groupPingmeshInterval: number;
        groupPingmeshBudget: number;
        clusterProbeInterval: number;
      }) => {
        // Loaded here, not at start-up: the data path's modules cost every other command ~60 MiB.
        const {
          GroupPingMesh,
          listenStats,
          NodeserverGroup,
          parseSecretRef,
          rlarkNetPath,
          startDataEngine,
          startNodeserver,
          watchPeersFile,
        } = await import("../network/index.ts");
        const logger = jsonLogger("nodeserver");
        if (options.groupListen && !options.node)
          throw usageError("--group-listen needs --node (or RLARK_NODE_NAME): the member's id");
        let group: NodeserverGroup | undefined;
        try {
          group =
            options.groupListen && options.node
              ? new NodeserverGroup({
                  id: options.node,
                  listen: options.groupListen,
                  ...(options.groupAdvertise ? { advertise: options.groupAdvertise } : {}),
                  clock: systemClock,
                  logger,
                })
              : undefined;
        } catch (error) {
          throw usageError((error as Error).message);
        }
        const pingMesh =
          group && options.node && options.groupListen && options.groupPingmeshInterval > 0
            ? new GroupPingMesh({
                self: options.node,
                listen: options.groupListen,
                group: () => group?.report(),
                clock: systemClock,
                intervalMs: options.groupPingmeshInterval,
                budget: options.groupPingmeshBudget,
              })
            : undefined;
        // a diagnosis aid: a group port taken on TCP costs the PingMesh, not the data path
        const pingMeshUp = await pingMesh?.start().then(
          () => true,
          (error: unknown) => {
            logger.error("the group PingMesh did not start", { error: String(error) });
            return false;
          },
        );
        const secret = options.peersSecret ? secretRef(options.peersSecret, parseSecretRef) : undefined;
        mkdirSync(options.socketDir, { recursive: true, mode: 0o755 });
        const dataEngine =
          options.dataEngine === "go" ? startDataEngine({ binary: rlarkNetPath(), logger }) : undefined;
        const server = await startNodeserver({
          socketDir: options.socketDir,
          idleMs: options.idleTimeout,
          clusterProbeIntervalMs: options.clusterProbeInterval,
          logger,
          ...(dataEngine ? { dataEngine } : {}),
          ...(options.node ? { node: options.node } : {}),
        });
        let token: string | undefined;
        const apply = (state: PeersState) => {
          token = state.statsToken;
          server.setState(state);
          group
            ?.apply(state.group)
            .catch((error: unknown) =>
              logger.error("the AgentGroup member did not start", { error: String(error) }),
            );
        };
        const stats = options.statsListen
          ? await listenStats({
              listen: options.statsListen,
              stats: () => server.stats(),
              ...(group ? { group: () => group?.report() } : {}),
              ...(pingMesh && pingMeshUp ? { pingMesh: () => pingMesh.report() } : {}),
              clusterProbes: () => ({ clusters: server.clusterProbes() }),
              token: () => token,
              logger,
            })
          : undefined;
        const source = secret
          ? await watchPeersSecret(apply, secret, options.kubeconfig, logger)
          : watchPeersFile(options.socketDir, apply, logger);
        logger.info("nodeserver listening", { socket: server.socketPath, stats: stats?.address });
        await untilSignal();
        await source.close();
        await pingMesh?.close();
        await group?.close();
        await stats?.close();
        await server.close();
        await dataEngine?.close();
      },
    );
}

function budgetArg(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1024)
    throw new InvalidArgumentError(`${JSON.stringify(value)} is not a whole number from 1 to 1024`);
  return n;
}

function groupAddress(flag: string): (value: string) => string {
  return (value) => {
    try {
      parseGroupAddress(value, flag);
    } catch (error) {
      throw new InvalidArgumentError((error as Error).message);
    }
    return value;
  };
}

function secretRef(
  value: string,
  parseSecretRef: (value: string) => { namespace: string; name: string },
): { namespace: string; name: string } {
  try {
    return parseSecretRef(value);
  } catch (error) {
    throw usageError((error as Error).message);
  }
}

async function watchPeersSecret(
  apply: (state: PeersState) => void,
  secret: { namespace: string; name: string },
  kubeconfig: string | undefined,
  logger: ReturnType<typeof jsonLogger>,
): Promise<{ close(): Promise<void> }> {
  // loaded only here: the sidecar and the file source never load the Kubernetes client
  const [{ loadKubeConfig }, { peersFromSecret }] = await Promise.all([
    import("../lib/kube-config.ts"),
    import("../network/index.ts"),
  ]);
  const abort = new AbortController();
  const states = peersFromSecret({
    kubeConfig: loadKubeConfig(kubeconfig),
    ...secret,
    logger,
    signal: abort.signal,
  });
  const running = (async () => {
    for await (const state of states) apply(state);
  })().catch((error: unknown) => logger.error("the peers Secret source ended", { error: String(error) }));
  return {
    async close() {
      abort.abort();
      await running;
    },
  };
}

export function registerSidecar(program: Command): void {
  program
    .command("sidecar")
    .description(
      "the network sidecar of a Domain pod; configured by RLARK_POD_NAMESPACE, RLARK_POD_NAME, RLARK_NODESERVER_SOCKET, RLARK_OUTBOUND_PORT, RLARK_INBOUND_PORT and (where to write the pod's virtual IP) RLARK_DOMAIN_IP_FILE",
    )
    .action(async () => {
      const env = process.env;
      const name = env.RLARK_POD_NAME;
      if (!name) throw usageError("RLARK_POD_NAME is not set (the pod's name)");
      const logger = jsonLogger("sidecar");
      const { rlarkNetPath, startSidecar } = await import("../network/index.ts");
      const sidecar = await startSidecar({
        pod: `${env.RLARK_POD_NAMESPACE ?? ""}/${name}`,
        nodeserverSocket: env.RLARK_NODESERVER_SOCKET || "/var/run/rlark/nodeserver.sock",
        outboundPort: port("RLARK_OUTBOUND_PORT", env.RLARK_OUTBOUND_PORT, 15001),
        inboundPort: port("RLARK_INBOUND_PORT", env.RLARK_INBOUND_PORT, 5700),
        rlarkNet: rlarkNetPath(),
        ...(env.RLARK_DOMAIN_IP_FILE ? { ipFile: env.RLARK_DOMAIN_IP_FILE } : {}),
        logger,
      });
      await untilSignal();
      await sidecar.close();
    });
}
