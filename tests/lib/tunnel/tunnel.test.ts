import { spawnSync } from "node:child_process";
import ssh2 from "ssh2";
import t from "tap";
import { FakeClock } from "../../../operators/lib/clock.ts";
import { generateKeyPair, openCertificateAuthority } from "../../../operators/lib/pki/index.ts";
import {
  type AgentMessage,
  createTunnelClient,
  type Delta,
  requestHandler,
  type Snapshot,
  type TunnelClient,
  type TunnelClientOptions,
} from "../../../operators/lib/tunnel/index.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";
import { HOUR, helloInfo, startTunnelHub, tempDir } from "./fixture.ts";

const task = (name: string) => ({
  apiVersion: "rlinf.io/v1alpha1",
  kind: "Task",
  metadata: { name, namespace: "agent-beijing" },
  spec: {},
});

function agent(t: { teardown(fn: () => unknown): void }, options: TunnelClientOptions): TunnelClient {
  const client = createTunnelClient({ backoff: { initialMs: 20, maxMs: 200 }, autoRenew: false, ...options });
  t.teardown(() => client.stop());
  client.start();
  return client;
}

t.test("hello, snapshot, delta, ack, report and heartbeat flow over the rlark-agent channel", async (t) => {
  const hub = await startTunnelHub({ heartbeatIntervalMs: 50 });
  t.teardown(() => hub.server.close());
  const received: AgentMessage[] = [];
  const applied: Array<Snapshot | Delta> = [];
  const client = agent(t, {
    hub: hub.address,
    credentials: hub.credentialsFor("beijing"),
    hello: helloInfo,
    onDesired: (m) => {
      applied.push(m);
    },
    capabilities: () => [{ name: "process-runtime", health: "READY" }],
  });
  await waitFor("the session", () => hub.sessions.length === 1);
  const session = hub.sessions[0]!;
  t.equal(session.cluster, "beijing");
  t.equal(session.hello.bootId, "boot-1");
  t.equal(session.hello.runtime, "process");
  session.on("message", (m) => received.push(m));
  session.send({ type: "snapshot", generation: 1, objects: [task("job-a-trainer")] });
  await waitFor("ack 1", () => session.ackedGeneration === 1);
  session.send({
    type: "delta",
    generation: 2,
    upserts: [task("job-b-trainer")],
    deletes: [{ kind: "Task", name: "job-a-trainer" }],
  });
  await waitFor("ack 2", () => session.ackedGeneration === 2);
  t.same(
    applied.map((m) => [m.type, m.generation]),
    [
      ["snapshot", 1],
      ["delta", 2],
    ],
  );
  client.report({
    nodes: [{ apiVersion: "v1", kind: "Node", metadata: { name: "n1" } }],
    pods: [],
    tasks: [],
    capabilities: [],
  });
  await waitFor("a report", () => received.some((m) => m.type === "report"));
  await waitFor("a heartbeat with capabilities", () =>
    received.some((m) => m.type === "heartbeat" && m.capabilities?.[0]?.health === "READY"),
  );
  t.same(hub.states[0], ["beijing", "Online"]);
  t.equal(client.connections, 1);
});

t.test("an agent certificate for cluster A cannot open a session as B", async (t) => {
  const hub = await startTunnelHub();
  t.teardown(() => hub.server.close());
  const creds = { ...hub.credentialsFor("beijing"), cluster: "shanghai" };
  const errors: string[] = [];
  const client = agent(t, { hub: hub.address, credentials: creds, hello: helloInfo });
  client.on("hub-error", (m) => errors.push(m));
  await waitFor("the refusal", () => errors.length > 0);
  t.match(errors[0], /certificate is for cluster beijing; hello names shanghai/);
  t.equal(hub.sessions.length, 0, "no session was handed to the hub");
});

for (const [name, make] of [
  [
    "a forged certificate (signed by a self-made CA)",
    async (hub: Awaited<ReturnType<typeof startTunnelHub>>) =>
      hub.credentialsFor("beijing", { ca: openCertificateAuthority({ dataDir: await tempDir() }) }),
  ],
  [
    "an expired certificate",
    async (hub: Awaited<ReturnType<typeof startTunnelHub>>) => {
      const past = openCertificateAuthority({
        dataDir: hub.dataDir,
        clock: new FakeClock(Date.now() - 3 * HOUR),
      });
      return hub.credentialsFor("beijing", { ca: past });
    },
  ],
  [
    "a revoked certificate",
    async (hub: Awaited<ReturnType<typeof startTunnelHub>>) => {
      const creds = hub.credentialsFor("beijing");
      hub.ca.revoke(hub.ca.verify(creds.certPem, { role: "agent" }).serial, "test");
      return creds;
    },
  ],
  [
    "a certificate presented with another key",
    async (hub: Awaited<ReturnType<typeof startTunnelHub>>) => ({
      ...hub.credentialsFor("beijing"),
      privateKeyPem: generateKeyPair().privateKeyPem,
    }),
  ],
] as const) {
  t.test(`${name} is refused at authentication`, async (t) => {
    const hub = await startTunnelHub();
    t.teardown(() => hub.server.close());
    const refusals: Error[] = [];
    const client = agent(t, { hub: hub.address, credentials: await make(hub), hello: helloInfo });
    client.on("refused", (e) => refusals.push(e));
    await waitFor("the refusal", () => refusals.length > 0);
    t.match(refusals[0]?.message, /authentication methods failed/);
    t.equal(hub.sessions.length, 0);
    t.equal(client.connected, false);
  });
}

t.test("a certificate revoked while its tunnel is open ends the tunnel", async (t) => {
  const clock = new FakeClock(Date.now());
  const hub = await startTunnelHub({ clock, heartbeatIntervalMs: 1000 });
  t.teardown(() => hub.server.close());
  const creds = hub.credentialsFor("beijing");
  agent(t, { hub: hub.address, credentials: creds, hello: helloInfo, heartbeatIntervalMs: 60_000 });
  await waitFor("the session", () => hub.sessions.length === 1);
  hub.ca.revoke(hub.ca.verify(creds.certPem, { role: "agent" }).serial, "stolen");
  clock.advance(1000);
  await waitFor("the session to close", () => hub.sessions[0]!.closed);
  t.same(hub.server.clusters, []);
});

t.test("three missed heartbeats mark the cluster Offline and the next one Online again", async (t) => {
  const clock = new FakeClock(Date.now());
  const hub = await startTunnelHub({ clock, heartbeatIntervalMs: 1000 });
  t.teardown(() => hub.server.close());
  const beats: AgentMessage[] = [];
  // The agent's own heartbeat timer is far away: the test sends heartbeats by hand.
  const client = agent(t, {
    hub: hub.address,
    credentials: hub.credentialsFor("beijing"),
    hello: helloInfo,
    heartbeatIntervalMs: HOUR,
  });
  await waitFor("the session", () => hub.sessions.length === 1);
  hub.sessions[0]!.on("message", (m) => beats.push(m));
  t.same(hub.states, [["beijing", "Online"]]);
  clock.advance(3000);
  t.equal(hub.server.clusterState("beijing"), "Online", "three intervals are not yet three missed beats");
  clock.advance(1000);
  t.same(hub.states, [
    ["beijing", "Online"],
    ["beijing", "Offline"],
  ]);
  client.heartbeat();
  await waitFor("Online again", () => hub.server.clusterState("beijing") === "Online");
  t.same(hub.states.at(-1), ["beijing", "Online"]);
  t.equal(beats.length, 1);
});

t.test(
  "the agent reconnects after the hub restarts, says hello again and gets a fresh snapshot",
  async (t) => {
    const hub = await startTunnelHub();
    t.teardown(() => hub.server.close());
    const snapshots: number[] = [];
    let onSession = (s: (typeof hub.sessions)[number]) =>
      s.send({ type: "snapshot", generation: 1, objects: [] });
    hub.sessions.push = (...items) => {
      for (const s of items) onSession(s);
      return Array.prototype.push.apply(hub.sessions, items);
    };
    const client = agent(t, {
      hub: hub.address,
      credentials: hub.credentialsFor("beijing"),
      hello: helloInfo,
      onDesired: (m) => {
        snapshots.push(m.generation);
      },
    });
    let disconnects = 0;
    client.on("disconnected", () => disconnects++);
    await waitFor("the first snapshot", () => snapshots.length === 1);
    onSession = (s) => s.send({ type: "snapshot", generation: 7, objects: [task("x")] });
    await hub.restart();
    await waitFor("the snapshot after the restart", () => snapshots.includes(7));
    t.ok(disconnects >= 1);
    t.ok(client.connections >= 2, "a new SSH connection was made");
    t.equal(hub.sessions.length, 2, "hello was sent again");
    t.equal(hub.sessions[1]!.hello.cluster, "beijing");
  },
);

t.test("a request stream carries one bounded JSON request and one bounded answer", async (t) => {
  const hub = await startTunnelHub();
  t.teardown(() => hub.server.close());
  const seen: unknown[] = [];
  let releaseSlow: () => void = () => {};
  let slowDone = false;
  agent(t, {
    hub: hub.address,
    credentials: hub.credentialsFor("beijing"),
    hello: helloInfo,
    streams: {
      echo: requestHandler(
        async (request) => {
          seen.push(request);
          const { size } = request as { size?: number };
          return { echoed: request, padding: "x".repeat(size ?? 0) };
        },
        { maxRequestBytes: 1024, maxResponseBytes: 4096 },
      ),
      slow: requestHandler(async () => {
        await new Promise<void>((r) => {
          releaseSlow = r;
        });
        slowDone = true;
        return { late: true };
      }),
    },
  });
  await waitFor("the session", () => hub.sessions.length === 1);
  // Stream forwarding is requested right after the welcome; retry until it is registered.
  const answer = await waitFor(
    "an answer to echo",
    () => hub.server.request("beijing", "echo", { hello: "agent" }),
    onRealServers,
  );
  t.same(answer, { echoed: { hello: "agent" }, padding: "" });
  t.same(
    await hub.server.request("beijing", "echo", { big: "y".repeat(2048) }),
    { error: "a message line exceeded 1024 bytes" },
    "a request over the bound is refused unread",
  );
  t.same(
    await hub.server.request("beijing", "echo", { size: 8192 }),
    { error: "the answer is longer than 4096 bytes" },
    "an answer over the bound is not sent",
  );
  await t.rejects(
    hub.server.request("beijing", "echo", {}, { maxResponseBytes: 8 }),
    /exceeded 8 bytes/,
    "the hub bounds what it reads too",
  );
  t.equal(seen.length, 3, "the oversized request never reached the handler");
  await t.rejects(
    hub.server.request("beijing", "slow", {}, { timeoutMs: 100 }),
    /no answer within 100 ms/,
    "the hub stops waiting",
  );
  releaseSlow();
  await waitFor("the late answer given up", () => slowDone);
  t.same(await hub.server.request("beijing", "echo", { again: true }), {
    echoed: { again: true },
    padding: "",
  });
  await t.rejects(hub.server.request("beijing", "exec", {}), /serves no "exec" streams/);
  await t.rejects(hub.server.request("shanghai", "echo", {}), /no agent connected/);
});

t.test("the certificate is renewed over the open tunnel without reconnecting", async (t) => {
  const hub = await startTunnelHub();
  t.teardown(() => hub.server.close());
  const dir = await tempDir();
  const { fileCredentialStore } = await import("../../../operators/lib/tunnel/index.ts");
  const store = fileCredentialStore(`${dir}/credentials.json`);
  const creds = hub.credentialsFor("beijing");
  const client = agent(t, { hub: hub.address, credentials: creds, credentialStore: store, hello: helloInfo });
  await waitFor("connected", () => client.connected);
  t.ok(client.renewNow());
  await waitFor("renewed", () => client.credentials.certPem !== creds.certPem);
  const renewed = hub.ca.verify(client.credentials.certPem, { role: "agent", cluster: "beijing" });
  t.not(renewed.serial, hub.ca.verify(creds.certPem, { role: "agent" }).serial);
  t.not(client.credentials.privateKeyPem, creds.privateKeyPem, "a fresh key");
  t.same(await store.load(), client.credentials, "saved for the next start");
  t.equal(client.connections, 1, "no reconnect");
});

t.test(
  "a slow agent pushes back through SSH flow control and the hub resyncs instead of buffering",
  async (t) => {
    const bound = 1024 * 1024;
    const hub = await startTunnelHub({ maxQueuedBytes: bound });
    t.teardown(() => hub.server.close());
    let release: () => void = () => {};
    const blocked = new Promise<void>((r) => {
      release = r;
    });
    let seen = 0;
    agent(t, {
      hub: hub.address,
      credentials: hub.credentialsFor("beijing"),
      hello: helloInfo,
      onDesired: async () => {
        if (seen++ === 0) await blocked;
      },
    });
    await waitFor("the session", () => hub.sessions.length === 1);
    const session = hub.sessions[0]!;
    let resyncs = 0;
    let maxQueued = 0;
    session.on("resync", () => resyncs++);
    const big = "x".repeat(64 * 1024);
    let generation = 0;
    for (let i = 0; i < 2000 && resyncs === 0; i++) {
      session.send({
        type: "delta",
        generation: ++generation,
        upserts: [{ ...task(`t${i}`), spec: { big } }],
        deletes: [],
      });
      maxQueued = Math.max(maxQueued, session.queuedBytes);
      // Give the socket every chance to drain: only the agent not reading can fill the queue.
      await new Promise((r) => setImmediate(r));
    }
    t.equal(resyncs, 1, "the overflow was reported once");
    t.ok(maxQueued <= bound, `the queue stayed within its bound (max ${maxQueued} bytes)`);
    t.ok(generation < 2000, `the hub stopped after ${generation} deltas`);
    t.ok(seen <= 5, `the blocked agent stopped reading (${seen} messages taken)`);
    t.ok(
      session.send({ type: "snapshot", generation: ++generation, objects: [] }),
      "a snapshot is accepted after",
    );
    release();
    await waitFor("the snapshot acknowledged", () => session.ackedGeneration === generation, {
      attempts: 3000,
      everyMs: 10,
    });
  },
);

const hasSsh = spawnSync("which", ["ssh"]).status === 0;

t.test(
  "a real OpenSSH client logging in with a password is refused",
  { skip: !hasSsh && "no ssh client" },
  async (t) => {
    const hub = await startTunnelHub();
    t.teardown(() => hub.server.close());
    const port = hub.address.split(":")[1]!;
    const { spawn } = await import("node:child_process");
    const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(
        "ssh",
        [
          "-p",
          port,
          "-o",
          "StrictHostKeyChecking=no",
          "-o",
          "UserKnownHostsFile=/dev/null",
          "-o",
          "PreferredAuthentications=password,keyboard-interactive",
          "-o",
          "NumberOfPasswordPrompts=1",
          "-o",
          "BatchMode=yes",
          "-o",
          "ConnectTimeout=10",
          "root@127.0.0.1",
          "true",
        ],
        { stdio: ["ignore", "ignore", "pipe"] },
      );
      let stderr = "";
      child.stderr.on("data", (c) => (stderr += c));
      child.on("close", (code) => resolve({ code, stderr }));
    });
    t.equal(run.code, 255);
    t.match(run.stderr, /Permission denied \(publickey\)/);

    // And ssh2 sending a password anyway gets nowhere either.
    const err = await new Promise<Error>((resolve) => {
      const c = new ssh2.Client();
      c.on("error", resolve);
      c.on("ready", () => resolve(new Error("logged in")));
      c.connect({
        host: "127.0.0.1",
        port: Number(port),
        username: "root",
        password: "hunter2",
        readyTimeout: 10_000,
      });
    });
    t.match(err.message, /authentication methods failed/);
    t.equal(hub.sessions.length, 0);
  },
);
