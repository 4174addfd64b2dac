// `rlark nodeserver` and `rlark sidecar`: the Domain data path's two in-cluster processes
// (docs/networking.md).

import { mkdirSync } from "node:fs";
import type { Command } from "commander";
import { jsonLogger } from "../lib/logger.ts";
import { rlarkNetPath, startNodeserver, startSidecar, watchPeersFile } from "../network/index.ts";
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
    .requiredOption("--socket-dir <dir>", "where nodeserver.sock is served and peers.json is read")
    .option("--node <name>", "this node's name, told to the hub", process.env.RLARK_NODE_NAME)
    .option(
      "--idle-timeout <duration>",
      "close a pooled hub connection idle this long",
      parseDuration,
      86_400_000,
    )
    .action(async (options: { socketDir: string; node?: string; idleTimeout: number }) => {
      const logger = jsonLogger("nodeserver");
      mkdirSync(options.socketDir, { recursive: true, mode: 0o755 });
      const server = await startNodeserver({
        socketDir: options.socketDir,
        idleMs: options.idleTimeout,
        logger,
        ...(options.node ? { node: options.node } : {}),
      });
      const watcher = watchPeersFile(options.socketDir, (state) => server.setState(state), logger);
      logger.info("nodeserver listening", { socket: server.socketPath });
      await untilSignal();
      watcher.close();
      await server.close();
    });
}

export function registerSidecar(program: Command): void {
  program
    .command("sidecar")
    .description(
      "the network sidecar of a Domain pod; configured by RLARK_POD_NAMESPACE, RLARK_POD_NAME, RLARK_NODESERVER_SOCKET, RLARK_OUTBOUND_PORT, RLARK_INBOUND_PORT",
    )
    .action(async () => {
      const env = process.env;
      const name = env.RLARK_POD_NAME;
      if (!name) throw usageError("RLARK_POD_NAME is not set (the pod's name)");
      const logger = jsonLogger("sidecar");
      const sidecar = await startSidecar({
        pod: `${env.RLARK_POD_NAMESPACE ?? ""}/${name}`,
        nodeserverSocket: env.RLARK_NODESERVER_SOCKET || "/var/run/rlark/nodeserver.sock",
        outboundPort: port("RLARK_OUTBOUND_PORT", env.RLARK_OUTBOUND_PORT, 15001),
        inboundPort: port("RLARK_INBOUND_PORT", env.RLARK_INBOUND_PORT, 5700),
        rlarkNet: rlarkNetPath(),
        logger,
      });
      await untilSignal();
      await sidecar.close();
    });
}
