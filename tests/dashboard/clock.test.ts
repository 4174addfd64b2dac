// The event stream's heartbeats and the end of a stream at its token's expiry run on the Clock it
// is given: a FakeClock decides when they happen. Real store, cache, HTTP server and client.
import { createServer, get, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import t from "tap";
import { createEventStream, EVENTS_PATH } from "../../operators/dashboard/events.ts";
import { createObjectCache } from "../../operators/dashboard/object-cache.ts";
import { FakeClock } from "../../operators/lib/clock.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { tempStore } from "../lib/store/helpers.ts";

t.test("heartbeats and the token's expiry follow the clock", async (t) => {
  const { store } = tempStore(t);
  const clock = new FakeClock(Date.UTC(2026, 5, 1, 12));
  const cache = createObjectCache({ store, logger: silentLogger, clock });
  await cache.start();
  t.teardown(() => cache.stop());
  const expiresAt = Math.floor(clock.now() / 1000) + 60;
  const events = createEventStream({
    cache,
    authenticate: (token) => (token === "alice-token" ? { subject: "alice", role: "viewer" } : undefined),
    sourceStatus: () => ({ revision: "abc" }),
    config: {},
    expiresAt: () => expiresAt,
    clock,
  });
  t.teardown(() => events.close());
  const server = createServer(
    (req, res) => void events.handle(req, res, new URL(req.url ?? "/", "http://x")),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => server.close());
  const { port } = server.address() as AddressInfo;

  let text = "";
  let ended = false;
  const response = await new Promise<IncomingMessage>((resolve) =>
    get(`http://127.0.0.1:${port}${EVENTS_PATH}?token=alice-token`, resolve),
  );
  response.setEncoding("utf8");
  response.on("data", (chunk: string) => (text += chunk));
  response.on("end", () => (ended = true));
  t.teardown(() => response.destroy());
  await waitFor("the snapshot", () => text.includes("event: snapshot"));
  t.notOk(text.includes(": ping"), "no heartbeat before the clock moves");

  clock.advance(15_000);
  await waitFor("a heartbeat", () => text.includes(": ping"));
  t.notOk(ended, "the stream stays open before its token expires");
  clock.advance(45_000);
  await waitFor("the stream to end at the token's expiry", () => ended);
});
