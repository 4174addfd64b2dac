// The hub's domain relay port as anyone who reaches it sees it: a real relay (its own store and
// CA in a temp dir) on 127.0.0.1, and per input one connection carrying a ticket line (right
// form and unknown, near misses, over-long, split into chunks) or a TLS-looking start with
// garbage after it. Expectation: each is refused (the socket closed) without an uncaught error;
// an error would end the worker, which the harness counts as a crash.
import { mkdtempSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { createDomainRelay } from "../../../operators/domain-relay/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { Registry } from "../../../operators/lib/metrics/index.ts";
import { openCertificateAuthority } from "../../../operators/lib/pki/index.ts";
import { openSqliteStore } from "../../../operators/lib/store/index.ts";
import type { FuzzTarget } from "../target.ts";

/** How long an input waits for the relay to close the connection before closing it itself. */
const WAIT_MS = 5;

let relay: Promise<{ port: number; refused: () => number }> | undefined;

/** The relay, started on first use (a worker that runs other targets never starts it). */
function startRelay(): Promise<{ port: number; refused: () => number }> {
  relay ??= (async () => {
    // hack/fuzz/run removes its scratch directory at the end
    const dataDir = mkdtempSync(join(process.env.RLARK_FUZZ_SCRATCH ?? tmpdir(), "relay-"));
    const store = openSqliteStore({ dataDir });
    const ca = openCertificateAuthority({ dataDir });
    const domainRelay = createDomainRelay({
      store,
      ca,
      dataDir,
      registry: new Registry(),
      logger: silentLogger,
    });
    const port = await domainRelay.listen(0, "127.0.0.1");
    return { port, refused: () => domainRelay.stats().refused };
  })();
  return relay;
}

const line = fc.oneof(
  fc.stringMatching(/^[0-9a-f]{32}\n$/),
  fc.stringMatching(/^[0-9a-fA-F]{30,34}\r?\n?$/),
  fc.string({ unit: "binary", maxLength: 80 }),
  fc.nat({ max: 200 }).map((n) => "a".repeat(n)),
);
const connection = fc.tuple(
  fc.oneof(
    { weight: 4, arbitrary: line.map((l) => Buffer.from(l, "latin1")) },
    // a TLS record header, then anything: the relay's TLS side refuses it
    {
      weight: 1,
      arbitrary: fc.uint8Array({ maxLength: 120 }).map((b) => Buffer.concat([Buffer.from([0x16, 3, 1]), b])),
    },
  ),
  fc.array(fc.nat({ max: 100 }), { maxLength: 3 }),
);

export const relaySocket: FuzzTarget<[Buffer, number[]]> = {
  name: "relay-socket",
  about: "connections to the hub's domain relay port: ticket lines and TLS starts, domain-relay/relay.ts",
  input: connection,
  async run([bytes, cuts], index) {
    const { port, refused } = await startRelay();
    // the target reaches the relay's ticket check, not just a closed port
    if (index === 500 && refused() === 0) throw new Error("the relay refused none of 500 connections");
    const socket = net.connect(port, "127.0.0.1");
    socket.on("error", () => {}); // reset by the relay: a refusal
    await new Promise<void>((resolve) => socket.once("connect", resolve).once("close", () => resolve()));
    const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
    let from = 0;
    for (const p of [...points, bytes.length]) {
      if (!socket.destroyed) socket.write(bytes.subarray(from, p));
      from = p;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, WAIT_MS);
      socket.once("close", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    socket.destroy();
  },
};
