// The nodeserver's streams between clusters when the Go data engine carries their bytes
// (data-engine.ts, ADR 0007's third decision): the nodeserver decides and holds the hub's HTTP/2
// control stream and ticket; rlark-net nodeserver-data gets the sidecar's socket (the source's
// end) or dials the pod (the target's), runs the end-to-end TLS and reports the bytes.

import type net from "node:net";
import type { DomainPeerPod } from "../api/generated/domain-peer.ts";
import type { Logger } from "../lib/logger.ts";
import type { DataEngine } from "./data-engine.ts";
import {
  closedWithin,
  type HubConnection,
  type InboundStream,
  REFUSAL_GRACE_MS,
  RefusedError,
} from "./hub-link.ts";
import type { PodInboundKey } from "./inbound-auth.ts";
import { inboundPreamble } from "./inbound-auth.ts";
import type { PairStats } from "./pair-stats.ts";
import type { ConnectionPool } from "./pool.ts";
import { refuse } from "./refuse.ts";

/** The nodeserver's state of one Domain, as far as these streams use it. */
interface DomainRuntime {
  entry: { domain: string };
  pool: ConnectionPool<HubConnection> | undefined;
  pair(source: string, target: string, path: "local" | "hub"): PairStats;
  podKey(pod: DomainPeerPod): PodInboundKey;
}

/** What both ends need: the engine, the stream's Domain, the nodeserver's logger. */
interface Context {
  engine: DataEngine;
  domain: DomainRuntime;
  logger: Logger;
}

/**
 * A stream to another cluster whose bytes the Go data engine carries: the hub's stream and
 * ticket here, the sidecar's socket and the end-to-end TLS there.
 */
export async function toHubInGo(
  { engine, domain, logger }: Context,
  pod: DomainPeerPod,
  target: string,
  socket: net.Socket,
  head: Buffer,
  stats: PairStats,
): Promise<void> {
  const refused = (error: Error, status: number) => {
    logger.warn("connection refused", {
      domain: domain.entry.domain,
      source: pod.ip,
      target,
      status,
      error: error.message,
    });
  };
  if (!domain.pool) return refuse(socket, 503, "no hub relay configured");
  let connection: HubConnection;
  let request: Awaited<ReturnType<HubConnection["request"]>>;
  try {
    connection = await domain.pool.acquire();
    request = await connection.request(target, pod.ip);
  } catch (error) {
    const status = error instanceof RefusedError ? error.status : 502;
    refused(error as Error, status);
    return refuse(socket, status, (error as Error).message);
  }
  const { stream, ticket, cluster } = request;
  if (socket.destroyed) {
    stream.close();
    return;
  }
  let up = false;
  let closedHere = false;
  const flow = engine.dial(
    socket,
    { domain: domain.entry.domain, relay: connection.address, ticket, cluster, head },
    {
      up: () => {
        up = true;
        stats.activeStreams++;
      },
      fail: (reason) => {
        // The hub closes the stream when the target's nodeserver does not take it, and its relay
        // may cut the data connection before that close arrives here (a reset, an EOF): give the
        // stream a moment to say that the target refused, so the reason is the refusal. A close
        // of our own (done, when the Go process died) is no refusal.
        const settled =
          stream.closed || closedHere ? Promise.resolve() : closedWithin(stream, REFUSAL_GRACE_MS);
        void settled.then(() => {
          const text =
            stream.closed && !closedHere
              ? `the target's nodeserver did not take the connection (${reason})`
              : reason;
          refused(new Error(text), 502);
          flow.answer(502, text);
        });
      },
      bytes: (sent, received) => {
        stats.bytesSent += sent;
        stats.bytesReceived += received;
        connection.touch();
      },
      done: (sent, received) => {
        stats.bytesSent += sent;
        stats.bytesReceived += received;
        if (up) stats.activeStreams--;
        if (!stream.closed) {
          closedHere = true;
          stream.close();
        }
      },
    },
  );
  stream.once("close", () => {
    if (!up) flow.cancel();
  });
}

/** A stream from the hub whose bytes the Go data engine carries (see toHubInGo). */
export function fromHubInGo(
  { engine, domain, logger }: Context,
  stream: InboundStream,
  pod: DomainPeerPod,
  dstPort: number,
  inboundPort: number,
): void {
  const { target, source } = stream;
  if (!pod.localIP) {
    stream.refuse(502, `pod ${pod.name} has no local IP yet`);
    return;
  }
  const handOff = stream.handOff();
  const stats = domain.pair(source, pod.ip, "hub");
  let responded = false;
  let up = false;
  const flow = engine.serve(
    {
      domain: domain.entry.domain,
      relay: handOff.relay,
      ticket: handOff.ticket,
      cluster: stream.sourceCluster,
      pod: `${pod.localIP}:${inboundPort}`,
      preamble: Buffer.from(
        inboundPreamble(domain.podKey(pod), { src: source, dst: pod.ip, srcPort: 0, dstPort }),
      ),
    },
    {
      dialed: () => {
        responded = handOff.respond();
        if (!responded) flow.cancel();
      },
      up: () => {
        up = true;
        stats.activeStreams++;
      },
      fail: (reason) => {
        if (!responded) return stream.refuse(502, reason);
        logger.warn("connection from the hub failed", {
          domain: domain.entry.domain,
          source,
          target,
          error: reason,
        });
      },
      bytes: (sent, received) => {
        stats.bytesSent += sent;
        stats.bytesReceived += received;
      },
      done: (sent, received) => {
        stats.bytesSent += sent;
        stats.bytesReceived += received;
        if (up) stats.activeStreams--;
        handOff.close();
      },
    },
  );
  handOff.onClose(() => {
    if (!up) flow.cancel();
  });
}
