import path from "node:path";
import t, { type Test } from "tap";
import { FakeClock, systemClock } from "../../operators/lib/clock.ts";
import { openCertificateAuthority } from "../../operators/lib/pki/index.ts";
import {
  acceptFromHub,
  ConnectionPool,
  HubConnection,
  type InboundStream,
} from "../../operators/network/index.ts";
import { startRelayHub } from "../helpers/relay-hub.ts";
import { waitFor } from "../helpers/wait-for.ts";

const A = "100.97.0.10";
const B = "100.97.0.20";

async function relayBed(t: Test) {
  const { hub, dir, domain, peer } = await startRelayHub(t, "relay");
  const train = await domain("train", "100.97.0.0/24", [
    { ip: A, cluster: "c1" },
    { ip: B, cluster: "c2" },
  ]);
  const other = await domain("other", "100.97.1.0/24", [{ ip: "100.97.1.10", cluster: "c1" }]);
  await peer("train", "c1", [A]);
  await peer("train", "c2", [B]);
  await peer("other", "c1", ["100.97.1.10"]);
  const base = { address: hub.domainRelayAddress as string, caPem: hub.pki.ca.certPem };
  // c1's: the sources' side.
  const trainCreds = { ...base, ...train("c1") };
  // Cluster c2's side: every stream the hub opens is answered and echoed.
  const opened: string[] = [];
  // (A stream its source closes before the handshake is done rejects accept(): nothing to echo.)
  const echo = (stream: InboundStream) => {
    opened.push(`${stream.source}>${stream.target}`);
    stream.accept().then(
      (data) => data.pipe(data),
      () => {},
    );
  };
  const link = await acceptFromHub({ ...base, ...train("c2") }, { globalNamespace: "agent-c2" }, echo);
  t.teardown(() => link.close());
  await waitFor("the reverse link registered", () => hub.domainRelay?.stats().reverseLinks.length === 1);
  return {
    hub,
    dir,
    base,
    trainCreds,
    otherCreds: { ...base, ...other("c1") },
    opened,
  };
}

async function roundTrip(stream: NodeJS.ReadWriteStream, text: string): Promise<string> {
  stream.write(text);
  return new Promise((resolve) => stream.once("data", (chunk: Buffer) => resolve(chunk.toString())));
}

t.test("the relay forwards members' streams and refuses everyone else, counting each refusal", async (t) => {
  const { hub, dir, base, trainCreds, otherCreds, opened } = await relayBed(t);
  const connection = await HubConnection.dial(trainCreds, systemClock);
  t.teardown(() => connection.close());
  const stream = await connection.open(`${B}:6379`, A);
  t.equal(await roundTrip(stream, "ping"), "ping", "bytes cross the relay both ways");
  t.same(opened, [`${A}>${B}:6379`], "the target cluster got the stream with its source");
  stream.end();

  const refusedBefore = hub.domainRelay?.stats().refused ?? 0;
  await t.rejects(
    connection.open(`${B}:6379`, "100.97.0.99"),
    /100\.97\.0\.99 is not a member of Domain train/,
    "a source outside the Domain",
  );
  await t.rejects(
    connection.open("100.97.1.10:80", A),
    /100\.97\.1\.10 is not a member of Domain train/,
    "a target in another Domain",
  );
  const otherConnection = await HubConnection.dial(otherCreds, systemClock);
  t.teardown(() => otherConnection.close());
  await t.rejects(
    otherConnection.open(`${B}:6379`, "100.97.1.10"),
    /is not a member of Domain other/,
    "another Domain's certificate cannot reach this Domain's pods",
  );
  t.equal(hub.domainRelay?.stats().refused, refusedBefore + 3, "three refusals counted");

  // A certificate for "train" from a CA the hub does not know: the handshake fails.
  const forger = openCertificateAuthority({ dataDir: path.join(dir, "forger") });
  const forged = forger.issue({
    role: "domain",
    name: "train",
    publicKey: trainCreds.keyPem,
    ttlMs: 3_600_000,
  });
  // (TLS 1.3 lets the client finish before the server checks its certificate: the refusal shows
  // as the connection closing under the first stream.)
  await t.rejects(async () => {
    const forgedConnection = await HubConnection.dial(
      { ...base, certPem: forged.certPem, keyPem: trainCreds.keyPem },
      systemClock,
    );
    t.teardown(() => forgedConnection.close());
    await forgedConnection.open(`${B}:6379`, A);
  }, "a certificate of an unknown CA gets nothing");
  await waitFor(
    "the forged handshake counted",
    () => (hub.domainRelay?.stats().refused ?? 0) === refusedBefore + 4,
  );
  t.match(
    await hub.manager.metricsText(),
    /rlark_domain_relay_refused_total\{reason="tls"\} 1/,
    "exported as a metric",
  );
});

t.test("the pool grows to 4 connections under 8 streams and shrinks once idle", async (t) => {
  const { trainCreds } = await relayBed(t);
  const clock = new FakeClock(Date.now());
  let dials = 0;
  const pool = new ConnectionPool({
    dial: () => {
      dials++;
      return HubConnection.dial(trainCreds, clock);
    },
    clock,
    idleMs: 60_000,
    gcIntervalMs: 10_000,
  });
  t.teardown(() => pool.close());
  const streams = [];
  for (let i = 0; i < 8; i++) {
    const connection = await pool.acquire();
    streams.push(await connection.open(`${B}:${7000 + i}`, A));
  }
  t.equal(pool.size, 4, "four connections");
  t.equal(dials, 4, "no more dials than connections");
  t.same(
    pool.connections.map((c) => c.activeStreams),
    [2, 2, 2, 2],
    "streams spread to the least-loaded connection",
  );
  for (const s of streams) s.destroy();
  await waitFor("streams closed", () => pool.connections.every((c) => c.activeStreams === 0));
  clock.advance(50_000);
  t.equal(pool.size, 4, "not yet idle long enough");
  clock.advance(20_000);
  t.equal(pool.size, 0, "every idle connection closed");
  const again = await pool.acquire();
  t.equal(pool.size, 1, "a new stream starts one connection again");
  t.equal(again.activeStreams, 0);
});

t.test("concurrent callers share one dial; failures back off 1 s doubling to 30 s", async (t) => {
  const clock = new FakeClock();
  let dials = 0;
  let fail = true;
  const pool = new ConnectionPool({
    dial: async () => {
      dials++;
      await new Promise((r) => setImmediate(r));
      if (fail) throw new Error("hub down");
      return {
        activeStreams: 0,
        lastActive: clock.now(),
        closed: false,
        close() {},
        onClose() {},
      };
    },
    clock,
  });
  t.teardown(() => pool.close());
  const results = await Promise.allSettled([pool.acquire(), pool.acquire(), pool.acquire()]);
  t.equal(dials, 1, "three waiters, one dial");
  t.ok(
    results.every((r) => r.status === "rejected"),
    "all three see the failure",
  );
  const delays: number[] = [];
  for (let i = 0; i < 7; i++) {
    delays.push(pool.backoffMs());
    await t.rejects(pool.acquire(), /next attempt/, "fails fast inside the backoff");
    clock.advance(pool.backoffMs());
    await t.rejects(pool.acquire(), /hub down/);
  }
  t.same(delays, [1000, 2000, 4000, 8000, 16000, 30000, 30000]);
  fail = false;
  clock.advance(pool.backoffMs());
  t.ok(await pool.acquire(), "connects once the hub is back");
  t.equal(pool.backoffMs(), 0, "and the backoff resets");
});
