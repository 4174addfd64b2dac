// GET …/pods/<name>/log: the tail of a mirrored pod's output, fetched from its cluster's agent
// over the tunnel and relayed in memory, so bounded.
import { clusterOf } from "../api/index.ts";
import type { Store } from "../lib/store/index.ts";
import type { TunnelServer } from "../lib/tunnel/index.ts";

/** A pod log tail larger than this is cut: the hub relays it in memory. */
const MAX_LOG_BYTES = 4 * 1024 * 1024;

export function podLogsOverTunnel(
  store: Store,
  tunnel: TunnelServer,
): (namespace: string, name: string, tail: number) => Promise<string> {
  return async (namespace, name, tail) => {
    const pod = await store.get("Pod", namespace, name);
    const cluster = clusterOf(namespace) ?? "";
    const stream = await tunnel.openStream(cluster, {
      purpose: "logs",
      meta: { name, namespace: (pod?.spec as { namespace?: string } | undefined)?.namespace ?? "", tail },
    });
    return readBounded(stream, MAX_LOG_BYTES);
  };
}

async function readBounded(
  stream: NodeJS.ReadableStream & { destroy(): void },
  limit: number,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    size += buffer.length;
    if (size > limit) {
      stream.destroy();
      break;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}
