// A stand-in for the nodeserver's GET /stats (contract B) on a fresh unix socket, for the agent's
// side of the Domain page's figures: the nodeserver itself is built on a parallel branch
// (operators/network), and this serves the same JSON until the two are merged.
import { mkdtemp } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Test } from "tap";

export type StatsHandler = (send: (status: number, body: string) => void) => void;

/** Serves GET /stats through `handler` on a new socket, closed at teardown; returns its path. */
export async function statsServer(t: Test, handler: StatsHandler): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-stats-"));
  const socket = path.join(dir, "nodeserver.sock");
  const server: Server = createServer((req, res) => {
    if (req.url !== "/stats") {
      res.writeHead(404).end();
      return;
    }
    handler((status, body) => res.writeHead(status, { "content-type": "application/json" }).end(body));
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return socket;
}
