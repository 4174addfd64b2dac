// Issue 31 item 4: the Domain relay binds a nodeserver to the cluster its certificate names. The
// attacker holds what cluster c1's agent is handed (its DomainPeer: certificate and key) and
// tries to (1) register a reverse link as cluster c2 and take c2's streams, (2) send a stream
// with the virtual IP of a c2 pod as its source, and (3) sitting on the network between a
// nodeserver and the hub, with the DomainPeer of another member cluster c3, terminate the
// end-to-end TLS of a stream meant for c2. A real hub runs the Domain controller (which issues
// the certificates) and the relay; the nodeservers are the real ones, each pod's :5700 a
// listener that records what reaches it.
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import tls from "node:tls";
import t, { type Test } from "tap";
import type { DomainPeer, PeersState } from "../../operators/api/index.ts";
import { createDomainController } from "../../operators/controllers/domain/index.ts";
import { startHub } from "../../operators/hub/index.ts";
import { systemClock } from "../../operators/lib/clock.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { HubConnection, type HubLinkCredentials, startNodeserver } from "../../operators/network/index.ts";
import { domain, job, pod } from "../controllers/domain/fixtures.ts";
import { relayEngineOptions } from "../helpers/relay-engine.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const CIDR = "100.96.0.0/24";

/** A pod's :5700: keeps every byte each connection brings. */
async function podPort(t: Test): Promise<{ port: number; received: () => string }> {
  const chunks: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => {
    server.close();
    for (const s of sockets) s.destroy();
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    received: () => Buffer.concat(chunks).toString("latin1"),
  };
}

/** What a sidecar does: CONNECT on the nodeserver's socket as `pod`; resolves with the status line. */
function sidecarConnect(
  socketPath: string,
  podName: string,
  target: string,
): Promise<net.Socket & { status: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketPath) as net.Socket & { status: string };
    let head = "";
    socket.on("error", reject);
    const onData = (chunk: Buffer) => {
      head += chunk.toString("latin1");
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      socket.off("data", onData);
      socket.status = head.slice(0, head.indexOf("\r\n"));
      resolve(socket);
    };
    socket.on("data", onData);
    socket.write(
      `CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\nrlark-pod: rlark-system/${podName}\r\n\r\n`,
    );
  });
}

async function bed(t: Test) {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-relay-bind-"));
  const hub = await startHub({
    dataDir: path.join(dir, "hub"),
    http: "127.0.0.1:0",
    ssh: "127.0.0.1:0",
    domainRelay: "127.0.0.1:0",
    ...relayEngineOptions(),
    controllers: (deps) => [createDomainController({ pki: deps.ca, dataDir: deps.dataDir })],
    logger: silentLogger,
  });
  t.teardown(async () => {
    await hub.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const { store } = hub;
  await store.create(domain("train", CIDR));
  await store.create(job("train", "train"));
  // The pods' local IPs are this machine's loopback, where each cluster's :5700 listener is.
  const members = [
    ["c1", "a-0"],
    ["c2", "b-0"],
    ["c2", "b-1"],
    ["c3", "x-0"],
  ] as const;
  for (const [cluster, name] of members)
    await store.create(pod(cluster, name, "train", name.slice(0, 1), { podIP: "127.0.0.1" }));
  const peers = await waitFor(
    "every cluster's DomainPeer",
    async () => {
      const { items } = await store.list<DomainPeer>("DomainPeer");
      const byCluster = new Map(items.map((p) => [p.metadata.namespace?.slice("agent-".length) ?? "", p]));
      return ["c1", "c2", "c3"].every((c) => byCluster.get(c)?.spec.pods?.length) ? byCluster : undefined;
    },
    onRealServers,
  );
  const peer = (cluster: string) => peers.get(cluster) as DomainPeer;
  const ipOf = (name: string) =>
    [...peers.values()].flatMap((p) => p.spec.pods ?? []).find((p) => p.name === name)?.ip as string;
  const relay = { address: hub.domainRelayAddress as string, caPem: hub.pki.ca.certPem };
  const credsOf = (cluster: string, address = relay.address): HubLinkCredentials => ({
    ...relay,
    address,
    certPem: peer(cluster).spec.cert,
    keyPem: peer(cluster).spec.key,
  });

  /** A real nodeserver for `globalNamespace`, with the DomainPeer of `credsCluster`. */
  async function nodeserver(
    name: string,
    globalNamespace: string,
    credsCluster: string,
    pods: DomainPeer,
    address = relay.address,
  ) {
    const socketDir = mkdtempSync(path.join(tmpdir(), "rlark-relay-ns-"));
    const inbound = await podPort(t);
    const ns = await startNodeserver({ socketDir, inboundPort: inbound.port, node: globalNamespace });
    t.teardown(async () => {
      await ns.close();
      rmSync(socketDir, { recursive: true, force: true });
    });
    const state: PeersState = {
      globalNamespace,
      hub: { ...relay, address },
      domains: [
        {
          ...pods.spec,
          cert: peer(credsCluster).spec.cert,
          key: peer(credsCluster).spec.key,
          domain: "train",
          cidr: CIDR,
        },
      ],
    };
    ns.setState(state);
    return { name, ns, inbound };
  }
  const linksOf = (globalNamespace: string) =>
    hub.domainRelay?.stats().reverseLinks.filter((l) => l.globalNamespace === globalNamespace).length ?? 0;
  return { hub, peer, ipOf, credsOf, nodeserver, linksOf, relay };
}

t.test("a nodeserver with cluster c1's certificate cannot register as c2 and take its streams", async (t) => {
  const { hub, peer, ipOf, nodeserver, linksOf } = await bed(t);
  const c2 = await nodeserver("c2", "agent-c2", "c2", peer("c2"));
  const c1 = await nodeserver("c1", "agent-c1", "c1", peer("c1"));
  await waitFor(
    "c1's and c2's reverse links",
    () => linksOf("agent-c2") === 1 && linksOf("agent-c1") === 1,
    onRealServers,
  );

  // The attacker: c1's DomainPeer (certificate and key), a peers state that says agent-c2 and
  // lists c2's pods, so the streams the hub would hand it go to its own :5700.
  const refusedBefore = hub.domainRelay?.stats().refused ?? 0;
  const attacker = await nodeserver("attacker", "agent-c2", "c1", peer("c2"));
  await waitFor(
    "the attacker's reverse link registered or refused",
    () => linksOf("agent-c2") === 2 || (hub.domainRelay?.stats().refused ?? 0) > refusedBefore,
    onRealServers,
  );
  t.equal(linksOf("agent-c2"), 1, "only c2's own nodeserver holds a reverse link of c2");
  t.match(
    await hub.manager.metricsText(),
    /rlark_domain_relay_refused_total\{reason="cluster-mismatch"\} [1-9]/,
    "the refusal is counted by its reason",
  );

  // a-0 (c1) reaches b-0 (c2): the stream goes to c2's nodeserver, and only there.
  const stream = await sidecarConnect(c1.ns.socketPath, "a-0", `${ipOf("b-0")}:6379`);
  t.teardown(() => stream.destroy());
  t.match(stream.status, /^HTTP\/1\.1 200/, "the stream is set up");
  stream.write("secret-for-b");
  const reached = () =>
    [c2, attacker].filter(({ inbound }) => inbound.received().includes("secret-for-b")).map((n) => n.name);
  t.same(
    await waitFor("the bytes at a :5700", () => reached().length > 0 && reached(), onRealServers),
    ["c2"],
    "they reached c2's :5700 alone",
  );
  t.match(
    c2.inbound.received(),
    `PROXY TCP4 ${ipOf("a-0")} ${ipOf("b-0")} 0 6379`,
    "from a-0, as the hub checked",
  );
});

t.test("a stream from cluster c1 that names a c2 pod as its source is refused", async (t) => {
  const { hub, peer, ipOf, credsOf, nodeserver, linksOf } = await bed(t);
  const c2 = await nodeserver("c2", "agent-c2", "c2", peer("c2"));
  await waitFor("c2's reverse link", () => linksOf("agent-c2") === 1, onRealServers);
  const connection = await HubConnection.dial(credsOf("c1"), systemClock);
  t.teardown(() => connection.close());
  const refusedBefore = hub.domainRelay?.stats().refused ?? 0;
  await t.rejects(
    connection.open(`${ipOf("b-0")}:6379`, ipOf("b-1")),
    /is not a pod of cluster c1/,
    "a source address of another cluster",
  );
  t.equal(c2.inbound.received(), "", "b-0 saw no stream claiming to be from b-1");
  t.equal(hub.domainRelay?.stats().refused, refusedBefore + 1, "refused once, counted");
  // c1's own pod may still send.
  const data = await connection.open(`${ipOf("b-0")}:6379`, ipOf("a-0"));
  t.teardown(() => data.destroy());
  data.write("from-a");
  await waitFor("a-0's bytes at c2's :5700", () => c2.inbound.received().includes("from-a"), onRealServers);
});

/**
 * A TCP proxy in front of the relay that passes control connections (TLS) through and takes over
 * data connections (a ticket line): it runs TLS on them itself with `creds`, as the server (the
 * nodeserver behind it is a stream's source) or as the client (it is the target), and sends
 * "intruder" once the handshake is done.
 */
async function interceptingProxy(t: Test, relay: string, creds: HubLinkCredentials, as: "server" | "client") {
  const colon = relay.lastIndexOf(":");
  const sockets = new Set<net.Socket>();
  const intercepted = { closed: 0 };
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on("error", () => {});
    client.once("data", (first: Buffer) => {
      client.pause();
      if (first[0] === 0x16) {
        const upstream = net.connect({ host: relay.slice(0, colon), port: Number(relay.slice(colon + 1)) });
        sockets.add(upstream);
        upstream.on("error", () => client.destroy());
        upstream.write(first);
        client.resume();
        client.pipe(upstream).pipe(client);
        return;
      }
      const rest = first.subarray(first.indexOf(10) + 1);
      if (rest.length > 0) client.unshift(rest);
      const context = { key: creds.keyPem, cert: creds.certPem, minVersion: "TLSv1.3" } as const;
      const socket =
        as === "server"
          ? new tls.TLSSocket(client, { isServer: true, secureContext: tls.createSecureContext(context) })
          : tls.connect({
              ...context,
              socket: client,
              rejectUnauthorized: false,
              servername: "train.domain",
            });
      socket.on("error", () => {});
      socket.once(as === "server" ? "secure" : "secureConnect", () => socket.write("intruder"));
      socket.once("close", () => intercepted.closed++);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => {
    server.close();
    for (const s of sockets) s.destroy();
  });
  return { address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`, intercepted };
}

t.test("a source's end-to-end TLS accepts only the cluster the stream was routed to", async (t) => {
  const { peer, ipOf, credsOf, nodeserver, linksOf, relay } = await bed(t);
  await nodeserver("c2", "agent-c2", "c2", peer("c2"));
  await waitFor("c2's reverse link", () => linksOf("agent-c2") === 1, onRealServers);
  // c1's data connections cross a network where cluster c3's nodeserver answers them.
  const proxy = await interceptingProxy(t, relay.address, credsOf("c3"), "server");
  const connection = await HubConnection.dial(credsOf("c1", proxy.address), systemClock);
  t.teardown(() => connection.close());
  const opened = connection.open(`${ipOf("b-0")}:6379`, ipOf("a-0"));
  // (Were it to succeed, the socket goes with the test.)
  opened.then((socket) => t.teardown(() => socket.destroy())).catch(() => {});
  await t.rejects(
    opened,
    /cluster c3.*c2|c2.*cluster c3/,
    "c1 refuses c3's nodeserver as the end of a stream to c2",
  );
});

t.test("a target's end-to-end TLS accepts only the cluster the stream came from", async (t) => {
  const { peer, ipOf, credsOf, nodeserver, linksOf, relay } = await bed(t);
  // c2's data connections cross a network where cluster c3's nodeserver makes them.
  const proxy = await interceptingProxy(t, relay.address, credsOf("c3"), "client");
  const c2 = await nodeserver("c2", "agent-c2", "c2", peer("c2"), proxy.address);
  await waitFor("c2's reverse link", () => linksOf("agent-c2") === 1, onRealServers);
  const connection = await HubConnection.dial(credsOf("c1"), systemClock);
  t.teardown(() => connection.close());
  // c1's own end waits at the hub for a join that never comes.
  connection.open(`${ipOf("b-0")}:6379`, ipOf("a-0")).then(
    (socket) => socket.destroy(),
    () => {},
  );
  await waitFor(
    "c2's nodeserver closed the intruder's connection, or b-0 got its bytes",
    () => proxy.intercepted.closed > 0 || c2.inbound.received().includes("intruder"),
    onRealServers,
  );
  t.match(
    c2.inbound.received(),
    `PROXY TCP4 ${ipOf("a-0")} ${ipOf("b-0")}`,
    "c2 had dialled b-0 for the stream",
  );
  t.notMatch(c2.inbound.received(), "intruder", "c3's bytes never reached b-0");
});
