import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import t from "tap";
import { FakeClock } from "../../../operators/lib/clock.ts";
import { createTunnelClient } from "../../../operators/lib/tunnel/index.ts";
import { waitFor } from "../../helpers/wait-for.ts";
import { helloInfo, startTunnelHub } from "./fixture.ts";

/** A TCP relay whose existing connections can be frozen: open, but silent, like a dead NAT entry. */
async function freezableProxy(targetPort: number) {
  const pairs: Array<[Socket, Socket]> = [];
  const server = createServer((down) => {
    const up = connect(targetPort, "127.0.0.1");
    down.on("error", () => {});
    up.on("error", () => {});
    down.pipe(up);
    up.pipe(down);
    pairs.push([down, up]);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as { port: number }).port,
    freeze() {
      for (const [down, up] of pairs) {
        down.unpipe(up);
        up.unpipe(down);
        down.pause();
        up.pause();
      }
    },
    close() {
      for (const [down, up] of pairs) {
        down.destroy();
        up.destroy();
      }
      server.close();
    },
  };
}

t.test("keepalive drops a half-open tunnel on both ends and the agent comes back", async (t) => {
  const hub = await startTunnelHub({ keepaliveIntervalMs: 100, keepaliveCountMax: 2 });
  t.teardown(() => hub.server.close());
  const proxy = await freezableProxy(hub.server.address().port);
  t.teardown(() => proxy.close());
  const client = createTunnelClient({
    hub: `127.0.0.1:${proxy.port}`,
    credentials: hub.credentialsFor("beijing"),
    hello: helloInfo,
    autoRenew: false,
    keepaliveIntervalMs: 100,
    keepaliveCountMax: 2,
    heartbeatIntervalMs: 3_600_000,
    backoff: { initialMs: 20, maxMs: 100 },
  });
  t.teardown(() => client.stop());
  const disconnects: Array<Error | undefined> = [];
  client.on("disconnected", (e) => disconnects.push(e));
  client.start();
  await waitFor("the first session", () => hub.sessions.length === 1);
  proxy.freeze();
  await waitFor("the hub to drop the silent session", () => hub.sessions[0]!.closed);
  await waitFor("the agent to notice", () => disconnects.length >= 1);
  t.match(disconnects[0]?.message, /Keepalive timeout/);
  await waitFor("a fresh session", () => hub.sessions.length >= 2 && !hub.sessions.at(-1)!.closed);
  t.same(hub.server.clusters, ["beijing"]);
});

t.test("the agent renews its certificate on its own at about two thirds of its lifetime", async (t) => {
  const hub = await startTunnelHub();
  t.teardown(() => hub.server.close());
  const clock = new FakeClock(Date.now());
  const creds = hub.credentialsFor("beijing", { ttlMs: 3_600_000 });
  const client = createTunnelClient({
    hub: hub.address,
    credentials: creds,
    hello: helloInfo,
    clock,
    random: () => 0.5,
    backoff: { initialMs: 20, maxMs: 100 },
  });
  t.teardown(() => client.stop());
  client.start();
  await waitFor("connected", () => client.connected);
  // notBefore is back-dated 5 minutes, so 2/3 of the 65-minute lifetime is 38 minutes from now.
  clock.advance(30 * 60_000);
  t.equal(client.credentials.certPem, creds.certPem, "not yet");
  clock.advance(10 * 60_000);
  await waitFor("renewed", () => client.credentials.certPem !== creds.certPem);
  t.equal(client.connections, 1);
});

t.test("an agent may not ask for renewals back to back", async (t) => {
  const hub = await startTunnelHub({ renewMinIntervalMs: 3_600_000 });
  t.teardown(() => hub.server.close());
  const creds = hub.credentialsFor("beijing");
  const client = createTunnelClient({
    hub: hub.address,
    credentials: creds,
    hello: helloInfo,
    autoRenew: false,
  });
  t.teardown(() => client.stop());
  const errors: string[] = [];
  client.on("hub-error", (m) => errors.push(m));
  client.start();
  await waitFor("connected", () => client.connected);
  client.renewNow();
  await waitFor("renewed", () => client.credentials.certPem !== creds.certPem);
  client.renewNow();
  await waitFor("the refusal", () => errors.length === 1);
  t.match(errors[0], /asked again too soon/);
});

t.test("a channel that never says hello is closed", async (t) => {
  const clock = new FakeClock(Date.now());
  const hub = await startTunnelHub({ clock, helloTimeoutMs: 5000 });
  t.teardown(() => hub.server.close());
  const creds = hub.credentialsFor("beijing");
  const ssh2 = (await import("ssh2")).default;
  const { agentUsername } = await import("../../../operators/lib/tunnel/ssh-options.ts");
  const conn = new ssh2.Client();
  const closed = new Promise<void>((resolve) => conn.on("close", () => resolve()));
  conn.on("error", () => {});
  conn.on("ready", () => {
    conn.subsys("rlark-agent", (err) => {
      t.error(err);
      // Silent: no hello. Advance the hub's clock past the deadline.
      setTimeout(() => clock.advance(5000), 50);
    });
  });
  const [host, port] = hub.address.split(":");
  conn.connect({
    host,
    port: Number(port),
    username: agentUsername(creds.certPem),
    privateKey: creds.privateKeyPem,
  });
  await closed;
  t.equal(hub.sessions.length, 0);
});

t.test(
  "with several hub addresses, a refusing one is passed over at once, not after a backoff",
  async (t) => {
    const hub = await startTunnelHub();
    t.teardown(() => hub.server.close());
    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    // A clock that never moves: any wait on the backoff would last forever.
    const clock = new FakeClock(Date.now());
    const client = createTunnelClient({
      hub: `127.0.0.1:${closed},${hub.address}`,
      credentials: hub.credentialsFor("beijing"),
      hello: helloInfo,
      clock,
    });
    t.teardown(() => client.stop());
    client.start();
    await waitFor("connected to the second address", () => client.connected);
    await waitFor("the hub to have the agent", () => hub.server.clusters.includes("beijing"));
    t.equal(client.connections, 1);
  },
);
