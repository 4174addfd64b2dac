// A stream's last bytes survive its target closing: when the agent's end of a stream (a pod's
// port, a file) ends and closes, the agent must still write what its channel holds for the hub's
// SSH window before it closes the channel.
import { randomBytes } from "node:crypto";
import { Duplex } from "node:stream";
import t from "tap";
import { createTunnelClient, type StreamHandler } from "../../../operators/lib/tunnel/index.ts";
import { waitFor } from "../../helpers/wait-for.ts";
import { helloInfo, startTunnelHub } from "./fixture.ts";

t.test("the hub reads every byte of a stream whose target ended and closed first", async (t) => {
  // Several times ssh2's 2 MiB channel window: most of it waits in the agent's channel.
  const payload = randomBytes(8 * 1024 * 1024);
  let targetClosed = false;
  const bulk: StreamHandler = async () => {
    // Like a socket to a pod's port: its end closes it (allowHalfOpen: false).
    const target = new Duplex({
      allowHalfOpen: false,
      read() {},
      write: (_c, _e, done) => done(),
    });
    target.push(payload);
    target.push(null);
    target.once("close", () => {
      targetClosed = true;
    });
    return target;
  };
  const hub = await startTunnelHub();
  t.teardown(() => hub.server.close());
  const client = createTunnelClient({
    hub: hub.address,
    credentials: hub.credentialsFor("beijing"),
    hello: helloInfo,
    streams: { bulk },
    backoff: { initialMs: 20, maxMs: 200 },
    autoRenew: false,
  });
  t.teardown(() => client.stop());
  client.start();
  await waitFor("connected", () => client.connected);
  const stream = await waitFor(
    "the bulk stream",
    () => hub.server.openStream("beijing", { purpose: "bulk" }),
    {
      attempts: 100,
      everyMs: 20,
    },
  );
  // The hub reads nothing until the agent's target has ended and closed.
  stream.pause();
  await waitFor("the target closed", () => targetClosed, { attempts: 200, everyMs: 25 });
  let received = 0;
  for await (const chunk of stream) received += (chunk as Buffer).length;
  t.equal(received, payload.length, "every byte arrived");
});
