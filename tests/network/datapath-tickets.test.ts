import http2 from "node:http2";
import net from "node:net";
import t, { type Test } from "tap";
import { systemClock } from "../../operators/lib/clock.ts";
import { ALPN_DIAL, SOURCE_HEADER, TICKET_HEADER } from "../../operators/lib/relay/index.ts";
import { acceptFromHub, dialHub, HubConnection, type InboundStream } from "../../operators/network/index.ts";
import { startRelayHub } from "../helpers/relay-hub.ts";
import { onProcesses, waitFor } from "../helpers/wait-for.ts";

const A = "100.98.0.10";
const B = "100.98.0.20";

/**
 * A hub with Domain "train" (A in c1, B in c2) and c2's nodeserver side echoing every stream,
 * reaching the relay at `viaB(relay address)` if given.
 */
async function bed(t: Test, viaB?: (relay: string) => Promise<string>) {
  const { hub, domain, peer } = await startRelayHub(t, "datapath");
  const train = await domain("train", "100.98.0.0/24", [
    { ip: A, cluster: "c1" },
    { ip: B, cluster: "c2" },
  ]);
  await peer("train", "c1", [A]);
  await peer("train", "c2", [B]);
  // c1's: the source's side.
  const creds = {
    address: hub.domainRelayAddress as string,
    caPem: hub.pki.ca.certPem,
    certPem: train("c1").certPem,
    keyPem: train("c1").keyPem,
  };
  // Port 9 is refused, as a nodeserver refuses a target that is no pod of its own. (A data
  // connection cut before its handshake rejects accept(), counted.)
  const accepts = { failed: 0 };
  const echo = (stream: InboundStream) =>
    stream.target.endsWith(":9")
      ? stream.refuse(502, "nothing listens on 9")
      : void stream.accept().then(
          (data) => data.pipe(data),
          () => accepts.failed++,
        );
  const bAddress = viaB ? await viaB(creds.address) : creds.address;
  const link = await acceptFromHub(
    { ...creds, certPem: train("c2").certPem, keyPem: train("c2").keyPem, address: bAddress },
    { globalNamespace: "agent-c2" },
    echo,
  );
  t.teardown(() => link.close());
  await waitFor("the reverse link registered", () => hub.domainRelay?.stats().reverseLinks.length === 1);
  return { hub, creds, accepts };
}

interface Recorded {
  sent: Buffer[];
  received: Buffer[];
}

/** A TCP proxy in front of the relay port that keeps every byte of every connection, both ways. */
async function recordingProxy(
  t: Test,
  target: string,
): Promise<{ address: string; connections: Recorded[] }> {
  const connections: Recorded[] = [];
  const colon = target.lastIndexOf(":");
  const server = net.createServer((client) => {
    const recorded: Recorded = { sent: [], received: [] };
    connections.push(recorded);
    const upstream = net.connect({ host: target.slice(0, colon), port: Number(target.slice(colon + 1)) });
    client.on("data", (chunk: Buffer) => recorded.sent.push(chunk));
    upstream.on("data", (chunk: Buffer) => recorded.received.push(chunk));
    client.pipe(upstream).pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => {
    server.close();
    server.unref();
  });
  return { address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`, connections };
}

/** The data connection among `connections` (the one that began with a ticket), ticket line cut. */
function dataConnection(connections: Recorded[]): { sent: Buffer; received: Buffer } {
  const found = connections.find((c) => c.sent[0] && c.sent[0][0] !== 0x16);
  const sent = Buffer.concat(found?.sent ?? []);
  return { sent: sent.subarray(sent.indexOf(10) + 1), received: Buffer.concat(found?.received ?? []) };
}

/** Asks the relay for a stream A -> B over a raw HTTP/2 session; resolves with the ticket it hands out. */
async function ticketFor(creds: Parameters<typeof dialHub>[0]): Promise<{ ticket: string; close(): void }> {
  const socket = await dialHub(creds, ALPN_DIAL);
  const session = http2.connect(`https://${creds.address}`, { createConnection: () => socket });
  session.on("error", () => {});
  const stream = session.request(
    { ":method": "CONNECT", ":authority": `${B}:7000`, [SOURCE_HEADER]: A },
    { endStream: false },
  );
  stream.on("error", () => {});
  const headers = await new Promise<http2.IncomingHttpHeaders>((resolve) => stream.once("response", resolve));
  return { ticket: String(headers[TICKET_HEADER]), close: () => session.destroy() };
}

/** Sends `line` on a plain connection to the relay port; resolves once the hub closes it. */
function present(address: string, line: string): Promise<net.Socket> {
  const colon = address.lastIndexOf(":");
  const socket = net.connect({ host: address.slice(0, colon), port: Number(address.slice(colon + 1)) });
  socket.on("error", () => {});
  socket.once("connect", () => socket.write(line));
  return Promise.resolve(socket);
}

t.test("a stream's bytes cross the hub as the two nodeservers' ciphertext, unchanged", async (t) => {
  let proxyB: Awaited<ReturnType<typeof recordingProxy>> | undefined;
  const { hub, creds } = await bed(t, async (relay) => {
    proxyB = await recordingProxy(t, relay);
    return proxyB.address;
  });
  const proxyA = await recordingProxy(t, creds.address);
  const connection = await HubConnection.dial({ ...creds, address: proxyA.address }, systemClock);
  t.teardown(() => connection.close());
  const marker = "plaintext-marker-".repeat(64);
  const data = await connection.open(`${B}:7000`, A);
  data.write(marker);
  let echoed = "";
  data.on("data", (chunk: Buffer) => {
    echoed += chunk.toString();
  });
  await waitFor("the echo", () => echoed.length >= marker.length);
  t.equal(echoed, marker, "the bytes came back intact");
  data.end();
  await waitFor("the connection closed at the hub", () => hub.domainRelay?.stats().joined === 0);
  const fromA = () => dataConnection(proxyA.connections);
  const toB = () => dataConnection(proxyB?.connections ?? []);
  t.ok(fromA().sent.length > marker.length, "the source's bytes went through the recorded port");
  t.equal(fromA().sent.indexOf("plaintext-marker"), -1, "none of them in the clear");
  // (The proxies may still be handing on the last bytes when the hub has closed.)
  await waitFor(
    "the target's nodeserver got exactly what the source sent, and the other way: the hub re-encrypted nothing",
    () => fromA().sent.equals(toB().received) && toB().sent.equals(fromA().received),
    onProcesses,
  );
  t.pass("the hub passed the nodeservers' ciphertext on unchanged");
});

t.test("a ticket nobody was given, or one already spent, gets nothing and is counted", async (t) => {
  const { hub, creds } = await bed(t);
  const refused = () => hub.domainRelay?.stats().refused ?? 0;
  const before = refused();

  const forged = await present(creds.address, `${"ab".repeat(16)}\n`);
  await waitFor("the forged ticket's connection closed", () => forged.closed);
  t.equal(refused(), before + 1, "a made-up ticket is refused");

  const garbage = await present(creds.address, "GET / HTTP/1.1\r\nhost: hub\r\n\r\n");
  await waitFor("the garbage connection closed", () => garbage.closed);
  t.equal(refused(), before + 2, "anything that is not a ticket is refused");

  const { ticket, close } = await ticketFor(creds);
  t.teardown(close);
  t.match(ticket, /^[0-9a-f]{32}$/, "the relay answered the stream with a ticket");
  const first = await present(creds.address, `${ticket}\n`);
  const second = await present(creds.address, `${ticket}\n`);
  await waitFor("the reused ticket's connection closed", () => second.closed);
  t.notOk(first.closed, "the first use is held for its join");
  t.equal(refused(), before + 3, "the second use is refused");
  first.destroy();
  t.match(
    await hub.manager.metricsText(),
    /rlark_domain_relay_refused_total\{reason="ticket"\} 3/,
    "exported as a metric",
  );
});

t.test(
  "a stream the target's nodeserver refuses fails at the source, and the connection carries on",
  async (t) => {
    const { hub, creds } = await bed(t);
    const connection = await HubConnection.dial(creds, systemClock);
    t.teardown(() => connection.close());
    await t.rejects(
      connection.open(`${B}:9`, A),
      /did not take the connection/,
      "the source sees the refusal",
    );
    await waitFor("the stream no longer active", () => connection.activeStreams === 0);
    const echoed = await connection.open(`${B}:7000`, A);
    echoed.write("again");
    await new Promise((resolve) => echoed.once("data", resolve));
    echoed.destroy();
    t.pass("the next stream on the same connection works");
    t.equal(hub.domainRelay?.stats().streams, 2, "both streams were the hub's to join");
  },
);

t.test("a join whose source never comes ends when its ticket expires, on both sides", async (t) => {
  const { hub, creds, accepts } = await bed(t);
  const { close } = await ticketFor(creds);
  t.teardown(close);
  await waitFor("the ticket expired at the hub", () => (hub.domainRelay?.stats().refused ?? 0) === 1, {
    attempts: 300,
    everyMs: 100,
  });
  await waitFor("the target's side gave up its handshake", () => accepts.failed === 1);
  t.match(
    await hub.manager.metricsText(),
    /rlark_domain_relay_refused_total\{reason="ticket-expired"\} 1/,
    "counted as an expired ticket",
  );
});
