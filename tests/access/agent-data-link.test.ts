// The agent data link (docs/tunnel.md): single-use tickets bound to a cluster and a stream, the
// agent's pinned check of the hub's TLS certificate, and nothing handed out to a connection
// before its ticket checks out — attacked with replayed, foreign and expired tickets, slow peers
// and a flood of idle connections.
import { mkdtemp, rm } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import tls from "node:tls";
import t, { type Test } from "tap";
import { openCertificateAuthority, openHostIdentity } from "../../operators/lib/pki/index.ts";
import { DataLinkServer, dialDataLink } from "../../operators/lib/tunnel/index.ts";
import { waitFor } from "../helpers/wait-for.ts";

async function pki(t: Test) {
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-data-link-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const ca = openCertificateAuthority({ dataDir: dir });
  const host = openHostIdentity({ dataDir: dir, ca });
  // A second hub of the same CA: valid chain, but not the hub this agent pinned.
  const other = openHostIdentity({ dataDir: path.join(dir, "other"), ca });
  return { ca, host, other };
}

async function endpoint(t: Test, ticketTtlMs?: number) {
  const { ca, host, other } = await pki(t);
  const server = new DataLinkServer({
    key: host.privateKeyPem,
    cert: host.certPem,
    ...(ticketTtlMs ? { ticketTtlMs } : {}),
  });
  await server.listen(0, "127.0.0.1");
  t.teardown(() => server.close());
  const dial = (offer: { port: number; ticket: string }, cluster: string, hubCertPem = host.certPem) =>
    dialDataLink({ host: "127.0.0.1", offer, cluster, caCertPem: ca.certPem, hubCertPem });
  return { server, dial, ca, host, other };
}

const closed = (socket: Socket) =>
  new Promise<void>((resolve) => {
    if (socket.destroyed) return resolve();
    socket.on("error", () => {});
    socket.once("close", () => resolve());
  });

t.test("a ticket is claimed once, by its cluster, and the bytes flow both ways", async (t) => {
  const { server, dial } = await endpoint(t);
  const ticket = server.issue("alpha");
  if (!ticket) throw new Error("no ticket");
  t.match(ticket.offer.ticket, /^[0-9a-f]{32}$/, "128 random bits");
  const agent = await dial(ticket.offer, "alpha");
  const hubEnd = await ticket.claimed;
  hubEnd.write("to the agent");
  const got = await new Promise<string>((resolve) =>
    agent.once("data", (d: Buffer) => resolve(d.toString())),
  );
  t.equal(got, "to the agent");
  agent.write("to the hub");
  const back = await new Promise<string>((resolve) =>
    hubEnd.once("data", (d: Buffer) => resolve(d.toString())),
  );
  t.equal(back, "to the hub");
  t.equal(server.stats().claimed, 1);
  t.equal(server.stats().pendingTickets, 0);
  agent.destroy();
});

t.test("a replayed ticket is refused", async (t) => {
  const { server, dial } = await endpoint(t);
  const ticket = server.issue("alpha");
  if (!ticket) throw new Error("no ticket");
  const first = await dial(ticket.offer, "alpha");
  await ticket.claimed;
  const replay = await dial(ticket.offer, "alpha");
  await closed(replay);
  t.equal(server.stats().claimed, 1);
  t.equal(server.stats().refused, 1);
  first.destroy();
});

t.test("a ticket presented for another cluster is refused and stays its own cluster's", async (t) => {
  const { server, dial } = await endpoint(t);
  const ticket = server.issue("alpha");
  if (!ticket) throw new Error("no ticket");
  const thief = await dial(ticket.offer, "beta");
  await closed(thief);
  t.equal(server.stats().refused, 1);
  const agent = await dial(ticket.offer, "alpha");
  await ticket.claimed;
  t.equal(server.stats().claimed, 1);
  agent.destroy();
});

t.test("a ticket never used expires, and is then refused", async (t) => {
  const { server, dial } = await endpoint(t, 300);
  const ticket = server.issue("alpha");
  if (!ticket) throw new Error("no ticket");
  await t.rejects(ticket.claimed, /did not arrive in time/);
  t.equal(server.stats().pendingTickets, 0);
  const late = await dial(ticket.offer, "alpha");
  await closed(late);
  t.equal(server.stats().claimed, 0);
});

t.test("a withdrawn ticket closes a connection that claims it anyway", async (t) => {
  const { server, dial } = await endpoint(t);
  const ticket = server.issue("alpha");
  if (!ticket) throw new Error("no ticket");
  ticket.cancel();
  const late = await dial(ticket.offer, "alpha");
  await closed(late);
  t.equal(server.stats().claimed, 0);
});

t.test("slow peers are dropped: no handshake, no ticket, half a ticket line", async (t) => {
  const { server, ca } = await endpoint(t, 300);
  const port = server.port;
  const silent = connect({ host: "127.0.0.1", port });
  await closed(silent);
  const noTicket = tls.connect({
    host: "127.0.0.1",
    port,
    ca: ca.certPem,
    checkServerIdentity: () => undefined,
  });
  await closed(noTicket);
  const half = tls.connect({ host: "127.0.0.1", port, ca: ca.certPem, checkServerIdentity: () => undefined });
  half.once("secureConnect", () => half.write('{"ticket":"'));
  await closed(half);
  t.ok(server.stats().refused >= 2, "counted");
  t.equal(server.stats().claimed, 0);
});

t.test("a flood of connections without tickets is bounded", async (t) => {
  const { server } = await endpoint(t);
  const sockets: Socket[] = [];
  t.teardown(() => {
    for (const s of sockets) s.destroy();
  });
  for (let i = 0; i < 80; i++) {
    const s = connect({ host: "127.0.0.1", port: server.port });
    s.on("error", () => {});
    sockets.push(s);
  }
  await waitFor("the excess connections refused", () => server.stats().refused >= 16);
  t.ok(server.stats().unverified <= 64);
  // A real agent still gets in once the idle ones are gone.
  for (const s of sockets) s.destroy();
  await waitFor("idle connections gone", () => server.stats().unverified === 0);
});

t.test("the agent sends its ticket only to the hub it pinned", async (t) => {
  const { server, dial, other } = await endpoint(t);
  const ticket = server.issue("alpha");
  if (!ticket) throw new Error("no ticket");
  await t.rejects(dial(ticket.offer, "alpha", other.certPem), /not the pinned hub/);
  t.equal(server.stats().claimed, 0);
  t.equal(server.stats().pendingTickets, 1, "the ticket was never shown");
  ticket.cancel();
});
