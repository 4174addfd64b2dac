// The hub's SSH endpoint bounds what a client that never logs in can hold: a login deadline,
// a cap on failed attempts per connection, and caps on concurrent unauthenticated connections
// per address and in total. Real sockets against the real ssh2 server.
import { connect, type Socket } from "node:net";
import ssh2 from "ssh2";
import t from "tap";
import { createTunnelClient } from "../../../operators/lib/tunnel/index.ts";
import { waitFor } from "../../helpers/wait-for.ts";
import { helloInfo, startTunnelHub } from "./fixture.ts";

interface Probe {
  socket: Socket;
  received: string;
  closed: boolean;
}

/** A raw TCP connection that reads what the server says and never logs in. */
function probe(address: string): Probe {
  const [host, port] = address.split(":");
  const p: Probe = { socket: connect({ host: host!, port: Number(port) }), received: "", closed: false };
  p.socket.on("data", (chunk: Buffer) => (p.received += chunk.toString("latin1")));
  p.socket.on("error", () => {});
  p.socket.on("close", () => (p.closed = true));
  return p;
}

const greeted = (p: Probe) => p.received.startsWith("SSH-2.0-rlark-hub");

/** Connects until the server greets a connection (the server frees slots asynchronously). */
async function greetedProbe(address: string): Promise<Probe> {
  for (let i = 0; i < 100; i++) {
    const p = probe(address);
    await waitFor("a greeting or a close", () => greeted(p) || p.closed);
    if (greeted(p)) return p;
  }
  throw new Error("no connection was greeted");
}

t.test("connections that never log in are closed at the login deadline", async (t) => {
  const hub = await startTunnelHub({ authTimeoutMs: 300 });
  t.teardown(() => hub.server.close());
  const idle = probe(hub.address);
  // Half a handshake: the client's identification line, then nothing.
  const half = probe(hub.address);
  half.socket.write("SSH-2.0-OpenSSH_9.6\r\n");
  await waitFor("the idle connection closed", () => idle.closed);
  await waitFor("the half-handshake connection closed", () => half.closed);
  t.ok(greeted(idle), "the server did talk to it first");
});

t.test("an authenticated agent is not cut off by the login deadline", async (t) => {
  const hub = await startTunnelHub({ authTimeoutMs: 300, heartbeatIntervalMs: 50 });
  t.teardown(() => hub.server.close());
  const client = createTunnelClient({
    hub: hub.address,
    credentials: hub.credentialsFor("beijing"),
    hello: helloInfo,
    autoRenew: false,
    heartbeatIntervalMs: 50,
  });
  t.teardown(() => client.stop());
  let disconnects = 0;
  client.on("disconnected", () => disconnects++);
  client.start();
  await waitFor("the session", () => hub.sessions.length === 1);
  // Well past the deadline, measured by heartbeats the hub received rather than by a clock.
  let beats = 0;
  hub.sessions[0]!.on("message", (m) => {
    if (m.type === "heartbeat") beats++;
  });
  await waitFor("20 heartbeats (1 s)", () => beats >= 20);
  t.equal(disconnects, 0);
  t.equal(client.connections, 1);
});

t.test("the 7th authentication attempt on one connection is answered with a disconnect", async (t) => {
  const hub = await startTunnelHub();
  t.teardown(() => hub.server.close());
  const [host, port] = hub.address.split(":");
  let attempts = 0;
  const outcome = await new Promise<string>((resolve) => {
    const c = new ssh2.Client();
    c.on("ready", () => resolve("logged in"));
    c.on("error", (e) => resolve(`error: ${e.message}`));
    c.on("close", () => resolve("closed"));
    c.connect({
      host: host!,
      port: Number(port),
      username: "root",
      readyTimeout: 10_000,
      authHandler: (_left, _partial, next) => {
        // Guessing passwords without end; only the hub can stop it.
        if (++attempts > 50) return next(false as never);
        next({ type: "password", username: "root", password: `guess-${attempts}` });
      },
    });
  });
  t.not(outcome, "logged in");
  t.notMatch(outcome, /authentication methods failed/, "the client did not give up by itself");
  t.equal(attempts, 7, "six failures are answered, the seventh attempt ends the connection");
});

const limits = {
  maxUnauthenticatedPerAddress: { maxUnauthenticatedPerAddress: 3 },
  maxStartups: { maxStartups: { start: 3, rate: 30, full: 3 }, maxUnauthenticatedPerAddress: 10 },
};
for (const [limit, options] of Object.entries(limits)) {
  t.test(`${limit}: one more concurrent unauthenticated connection is refused`, async (t) => {
    const hub = await startTunnelHub(options);
    t.teardown(() => hub.server.close());
    const held = [probe(hub.address), probe(hub.address), probe(hub.address)];
    t.teardown(() => {
      for (const p of held) p.socket.destroy();
    });
    await waitFor("three connections greeted", () => held.every(greeted));
    const extra = probe(hub.address);
    await waitFor("the fourth connection closed", () => extra.closed);
    t.equal(extra.received, "", "refused before the SSH greeting");
    t.notOk(
      held.some((p) => p.closed),
      "the held connections are untouched",
    );

    // A slot freed is a slot available again, and an agent gets in.
    held[0]!.socket.destroy();
    held.push(await greetedProbe(hub.address));
    for (const p of held) p.socket.destroy();
    const client = createTunnelClient({
      hub: hub.address,
      credentials: hub.credentialsFor("beijing"),
      hello: helloInfo,
      autoRenew: false,
      backoff: { initialMs: 20, maxMs: 100 },
    });
    t.teardown(() => client.stop());
    client.start();
    await waitFor("the agent's session", () => hub.sessions.length === 1);
  });
}
