// The agent checks the hub before it serves anything: an SSH server that is not the hub (its
// host key is not the one the pinned CA certified) gets no login and no stream, even when it
// replays the real hub's public host-key certificate.
import type { AddressInfo } from "node:net";
import { Duplex, Readable, Writable } from "node:stream";
import ssh2, { type Connection } from "ssh2";
import t from "tap";
import { generateKeyPair, openCertificateAuthority } from "../../../operators/lib/pki/index.ts";
import {
  type AgentCredentials,
  createTunnelClient,
  encodeLine,
  fileCredentialStore,
  type StreamHandler,
  type TunnelClient,
  type TunnelClientOptions,
} from "../../../operators/lib/tunnel/index.ts";
import { AGENT_SUBSYSTEM, STREAM_BIND_ADDR } from "../../../operators/lib/tunnel/ssh-options.ts";
import { waitFor } from "../../helpers/wait-for.ts";
import { helloInfo, startTunnelHub, tempDir } from "./fixture.ts";

const SECRET_LOG = "pod log line the impostor must never see\n";

const logs: StreamHandler = async () =>
  Duplex.from({
    readable: Readable.from([SECRET_LOG]),
    writable: new Writable({ write: (_c, _e, done) => done() }),
  });

function agent(t: { teardown(fn: () => unknown): void }, options: TunnelClientOptions): TunnelClient {
  const client = createTunnelClient({ backoff: { initialMs: 20, maxMs: 200 }, autoRenew: false, ...options });
  t.teardown(() => client.stop());
  client.start();
  return client;
}

interface Impostor {
  address: string;
  logins: number;
  /** Stream channel opens the agent refused, and bytes any accepted one carried. */
  refusedOpens: number;
  servedBytes: number;
  close(): Promise<void>;
}

/**
 * A real ssh2 server with a host key no CA certified. It accepts any login and asks the agent for
 * a `logs` stream as soon as it can; with `welcomeWith` it answers the agent's subsystem with a
 * welcome carrying that (public) host-key certificate, else it stays silent.
 */
async function startImpostor(
  welcomeWith?: string,
  hostKey = generateKeyPair().privateKeyPem,
): Promise<Impostor> {
  const state = { logins: 0, refusedOpens: 0, servedBytes: 0 };
  const conns = new Set<Connection>();
  const server = new ssh2.Server({ hostKeys: [hostKey] }, (conn) => {
    conns.add(conn);
    conn.on("error", () => {});
    conn.on("close", () => conns.delete(conn));
    conn.on("authentication", (ctx) => {
      state.logins++;
      ctx.accept();
    });
    const tryStream = () =>
      conn.forwardOut(STREAM_BIND_ADDR, 1, "logs", 0, (err, channel) => {
        if (err) {
          state.refusedOpens++;
          return;
        }
        channel.on("data", (chunk: Buffer) => (state.servedBytes += chunk.length));
        channel.on("error", () => {});
        channel.write(encodeLine({ purpose: "logs", meta: { name: "trainer-0", namespace: "ml" } }));
      });
    conn.on("ready", tryStream);
    conn.on("request", (accept, _reject, name) => {
      accept?.(1);
      if (name === "tcpip-forward") tryStream();
    });
    conn.on("session", (accept) => {
      accept().on("subsystem", (acceptSub, _rejectSub, info) => {
        if (info.name !== AGENT_SUBSYSTEM) return;
        const stream = acceptSub();
        tryStream();
        if (welcomeWith) {
          stream.write(encodeLine({ type: "welcome", hostCert: welcomeWith, heartbeatIntervalMs: 1000 }));
        }
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    get logins() {
      return state.logins;
    },
    get refusedOpens() {
      return state.refusedOpens;
    },
    get servedBytes() {
      return state.servedBytes;
    },
    async close() {
      for (const c of conns) c.end();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

t.test(
  "an agent pinned to the hub's certificate hangs up on another host key before logging in",
  async (t) => {
    const hub = await startTunnelHub();
    t.teardown(() => hub.server.close());
    const impostor = await startImpostor();
    t.teardown(() => impostor.close());
    const creds: AgentCredentials = { ...hub.credentialsFor("beijing"), hubCertPem: hub.host.certPem };
    const refusals: Error[] = [];
    const client = agent(t, {
      hub: impostor.address,
      credentials: creds,
      hello: helloInfo,
      streams: { logs },
    });
    client.on("refused", (e) => refusals.push(e));
    await waitFor("the refusal", () => refusals.length >= 2);
    t.match(refusals[0]?.message, /is not the hub: .*does not certify the key of this SSH handshake/);
    t.equal(impostor.logins, 0, "the impostor never saw the agent's login");
    t.equal(impostor.servedBytes, 0);
    t.equal(client.connected, false);
  },
);

t.test(
  "without a pinned hub certificate (older credentials) the agent logs in but refuses every stream channel until a welcome checks out",
  async (t) => {
    const hub = await startTunnelHub();
    t.teardown(() => hub.server.close());
    const impostor = await startImpostor();
    t.teardown(() => impostor.close());
    const client = agent(t, {
      hub: impostor.address,
      credentials: hub.credentialsFor("beijing"),
      hello: helloInfo,
      streams: { logs },
    });
    await waitFor("the login", () => impostor.logins >= 1);
    await waitFor("stream opens refused", () => impostor.refusedOpens >= 2);
    t.equal(impostor.servedBytes, 0, "no byte of the pod log left the agent");
    t.equal(client.connected, false);
  },
);

t.test("a welcome replaying the real hub's certificate over another host key is refused", async (t) => {
  const hub = await startTunnelHub();
  t.teardown(() => hub.server.close());
  const impostor = await startImpostor(hub.host.certPem);
  t.teardown(() => impostor.close());
  const refusals: Error[] = [];
  const client = agent(t, {
    hub: impostor.address,
    credentials: hub.credentialsFor("beijing"),
    hello: helloInfo,
    streams: { logs },
  });
  client.on("refused", (e) => refusals.push(e));
  await waitFor("the refusal of the welcome", () => refusals.length >= 2);
  t.match(refusals[0]?.message, /does not certify the key of this SSH handshake/);
  t.equal(impostor.servedBytes, 0);
  t.equal(client.connected, false);
});

t.test("a host key certified by another CA is refused, pinned or not", async (t) => {
  const hub = await startTunnelHub();
  t.teardown(() => hub.server.close());
  const otherCa = openCertificateAuthority({ dataDir: await tempDir() });
  const hostKey = generateKeyPair().privateKeyPem;
  const otherCert = otherCa.issue({ role: "hub", name: "hub", publicKey: hostKey, ttlMs: 3600_000 }).certPem;
  const impostor = await startImpostor(otherCert, hostKey);
  t.teardown(() => impostor.close());
  for (const pinned of [undefined, otherCert]) {
    const refusals: Error[] = [];
    const credentials: AgentCredentials = {
      ...hub.credentialsFor("beijing"),
      ...(pinned ? { hubCertPem: pinned } : {}),
    };
    const client = agent(t, { hub: impostor.address, credentials, hello: helloInfo, streams: { logs } });
    client.on("refused", (e) => refusals.push(e));
    await waitFor("the refusal", () => refusals.length >= 2);
    await client.stop();
    t.match(refusals[0]?.message, /is not signed by this CA/, pinned ? "pinned" : "not pinned");
    t.equal(client.connected, false);
  }
  t.equal(impostor.servedBytes, 0);
});

t.test(
  "with the real hub the pinned agent connects and serves streams; a renewed hub certificate is pinned",
  async (t) => {
    const hub = await startTunnelHub();
    t.teardown(() => hub.server.close());
    const dir = await tempDir();
    const store = fileCredentialStore(`${dir}/credentials.json`);
    // Pinned at enrollment: an older certificate over the same host key.
    const older = hub.ca.issue({
      role: "hub",
      name: "hub",
      publicKey: hub.host.privateKeyPem,
      ttlMs: 3600_000,
    });
    const creds: AgentCredentials = { ...hub.credentialsFor("beijing"), hubCertPem: older.certPem };
    const client = agent(t, {
      hub: hub.address,
      credentials: creds,
      credentialStore: store,
      hello: helloInfo,
      streams: { logs },
    });
    await waitFor("connected", () => client.connected);
    const stream = await waitFor(
      "the logs stream",
      () => hub.server.openStream("beijing", { purpose: "logs" }),
      {
        attempts: 100,
        everyMs: 20,
      },
    );
    t.ok(stream, "the stream opened");
    let text = "";
    for await (const chunk of stream) text += chunk;
    t.equal(text, SECRET_LOG);
    await waitFor(
      "the hub's current certificate pinned",
      () => client.credentials.hubCertPem === hub.host.certPem,
    );
    t.equal((await store.load())?.hubCertPem, hub.host.certPem, "saved for the next start");
  },
);
