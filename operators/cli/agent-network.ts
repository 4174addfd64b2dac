// The process runtime's Domain networking (docs/networking.md): the agent runs this machine's
// nodeserver in its own process, started when the first DomainPeer arrives (an agent with no
// Domain pods opens no socket), and rewrites its peers state (DIR/peers.json) from the
// DomainPeers the hub hands over, at once on every change. A write the disk refuses throws: the
// nodeserver goes on with the last file, and the agent retries the same state.

import { mkdirSync } from "node:fs";
import path from "node:path";
import type { AgentOptions } from "../agent/index.ts";
import type { Logger } from "../lib/logger.ts";
import {
  type DataEngine,
  type Nodeserver,
  rlarkNetPath,
  SOCKET_NAME,
  startDataEngine,
  startNodeserver,
  watchPeersFile,
  writePeersFile,
} from "../network/index.ts";

export interface AgentNodeserver {
  onPeersState: NonNullable<AgentOptions["onPeersState"]>;
  /** The nodeserver's unix socket (its GET /stats feeds the Domain page). */
  socket: string;
  stop(): Promise<void>;
}

export function agentNodeserver(options: {
  dir: string;
  node: string;
  logger: Logger;
  /** `go`: the bytes between clusters in rlark-net nodeserver-data (data-engine.ts). */
  dataEngine?: "node" | "go";
  /** How often the nodeserver probes the other clusters of its Domains; 0: never. */
  clusterProbeIntervalMs?: number;
}): AgentNodeserver {
  const { dir, logger } = options;
  let engine: DataEngine | undefined;
  let last = "";
  let started: Promise<{ server: Nodeserver; watcher: { close(): void } } | undefined> | undefined;
  const start = () => {
    started ??= (async () => {
      if (options.dataEngine === "go") engine = startDataEngine({ binary: rlarkNetPath(), logger });
      const server = await startNodeserver({
        socketDir: dir,
        node: options.node,
        logger,
        ...(engine ? { dataEngine: engine } : {}),
        ...(options.clusterProbeIntervalMs === undefined
          ? {}
          : { clusterProbeIntervalMs: options.clusterProbeIntervalMs }),
      });
      const watcher = watchPeersFile(dir, (state) => server.setState(state), logger);
      logger.info("nodeserver listening", { socket: server.socketPath });
      return { server, watcher };
    })().catch((error: unknown) => {
      logger.error("could not start the nodeserver; Domain pods have no data path", {
        dir,
        error: (error as Error).message,
      });
      return undefined;
    });
  };
  return {
    socket: path.join(dir, SOCKET_NAME),
    onPeersState(state) {
      const text = JSON.stringify(state);
      if (text === last) return;
      if (!started && state.domains.length === 0) return;
      try {
        mkdirSync(dir, { recursive: true, mode: 0o755 });
        writePeersFile(dir, state);
        last = text;
      } catch (error) {
        // The nodeserver keeps the last state it read; the agent's apply retry calls again.
        const message = `could not write the peers state in ${dir}: ${(error as Error).message}`;
        logger.error("could not write the peers state", { dir, error: (error as Error).message });
        throw new Error(message);
      }
      start();
    },
    async stop() {
      const running = await started;
      running?.watcher.close();
      await running?.server.close();
      await engine?.close();
    },
  };
}
