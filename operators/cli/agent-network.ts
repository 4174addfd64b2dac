// `rlark agent --nodeserver-dir DIR --domain-relay HOST:PORT` (process runtime): the agent runs
// this machine's nodeserver in its own process and rewrites its peers state (DIR/peers.json) from
// the DomainPeers the hub hands over, at once on every change (docs/networking.md).

import { mkdirSync } from "node:fs";
import path from "node:path";
import type { AgentOptions } from "../agent/index.ts";
import { namespaceFor } from "../api/index.ts";
import type { Logger } from "../lib/logger.ts";
import {
  peersStateFrom,
  SOCKET_NAME,
  startNodeserver,
  watchPeersFile,
  writePeersFile,
} from "../network/index.ts";

export async function startAgentNodeserver(options: {
  dir: string;
  domainRelay?: string;
  node: string;
  logger: Logger;
}): Promise<{
  onDomainPeers: NonNullable<AgentOptions["onDomainPeers"]>;
  /** The nodeserver's unix socket (its GET /stats feeds the Domain page). */
  socket: string;
  stop(): Promise<void>;
}> {
  mkdirSync(options.dir, { recursive: true, mode: 0o755 });
  const server = await startNodeserver({
    socketDir: options.dir,
    node: options.node,
    logger: options.logger,
  });
  const watcher = watchPeersFile(options.dir, (state) => server.setState(state), options.logger);
  let last = "";
  return {
    socket: path.join(options.dir, SOCKET_NAME),
    onDomainPeers(peers, { cluster, caCertPem }) {
      const state = peersStateFrom(
        peers,
        namespaceFor(cluster),
        options.domainRelay ? { address: options.domainRelay, caPem: caCertPem } : undefined,
      );
      const text = JSON.stringify(state);
      if (text === last) return;
      last = text;
      writePeersFile(options.dir, state);
    },
    async stop() {
      watcher.close();
      await server.close();
    },
  };
}
