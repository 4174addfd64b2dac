// The hub's domain relay (docs/networking.md, ADR 0007): a mutual-TLS port where nodeservers
// present their Domain's certificate (role `domain`, signed by the hub CA). A nodeserver's
// CONNECT stream to a virtual IP is forwarded, after checkHostInDomain has placed both the
// source and the target in that Domain, on the reverse link of the target's cluster. Every
// refusal is logged (`domain relay refused`) and counted (rlark_domain_relay_refused_total).

import { X509Certificate } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import http2, { type ClientHttp2Session, type Http2Session, type ServerHttp2Stream } from "node:http2";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import tls, { type TLSSocket } from "node:tls";
import { namespaceFor } from "../../api/index.ts";
import type { Logger } from "../../lib/logger.ts";
import type { Registry } from "../../lib/metrics/index.ts";
import {
  type CertificateAuthority,
  generateKeyPair,
  publicKeyPem,
  writeFileAtomic,
} from "../../lib/pki/index.ts";
import {
  type AcceptHello,
  ALPN_ACCEPT,
  ALPN_DIAL,
  clientSessionOptions,
  MAX_HELLO_BYTES,
  REASON_HEADER,
  SESSION_WINDOW,
  SOURCE_HEADER,
  serverSessionOptions,
  splice,
  splitTarget,
} from "../../lib/relay/index.ts";
import type { Store } from "../../lib/store/index.ts";
import { checkHostInDomain } from "./check-host.ts";

export interface DomainRelayOptions {
  store: Store;
  ca: CertificateAuthority;
  dataDir: string;
  registry: Registry;
  logger: Logger;
}

export interface DomainRelayStats {
  /** Bytes forwarded, both directions, since start. */
  relayedBytes: number;
  refused: number;
  streams: number;
  reverseLinks: { domain: string; globalNamespace: string; node?: string }[];
}

export interface DomainRelay {
  listen(port: number, host: string): Promise<number>;
  stats(): DomainRelayStats;
  close(): Promise<void>;
}

const DAY = 24 * 60 * 60 * 1000;

/** The relay's own key and a fresh `hub` certificate for it (re-issued on every start). */
function relayCredentials(ca: CertificateAuthority, dataDir: string): { key: string; cert: string } {
  const keyPath = join(dataDir, "pki", "relay.key");
  if (!existsSync(keyPath)) writeFileAtomic(keyPath, generateKeyPair().privateKeyPem, 0o600);
  const key = readFileSync(keyPath, "utf8");
  const cert = ca.issue({
    role: "hub",
    name: "domain-relay",
    publicKey: publicKeyPem(key),
    ttlMs: 365 * DAY,
  }).certPem;
  return { key, cert };
}

interface ReverseLink {
  session: ClientHttp2Session;
  hello: AcceptHello;
}

export function createDomainRelay(options: DomainRelayOptions): DomainRelay {
  const { store, ca, logger } = options;
  const refusedTotal = options.registry.counter({
    name: "rlark_domain_relay_refused_total",
    help: "Connections and streams the domain relay refused, by reason.",
    labelNames: ["reason"],
  });
  const bytesTotal = options.registry.counter({
    name: "rlark_domain_relay_bytes_total",
    help: "Bytes the domain relay forwarded between clusters, by Domain.",
    labelNames: ["domain"],
  });
  const counters = { relayedBytes: 0, refused: 0, streams: 0 };
  /** Reverse links by Domain, then by the agent namespace of their cluster. */
  const links = new Map<string, Map<string, ReverseLink[]>>();
  const sockets = new Set<TLSSocket>();

  const refuse = (reason: string, fields: Record<string, unknown>) => {
    counters.refused++;
    refusedTotal.labels({ reason }).inc();
    logger.warn("domain relay refused", { reason, ...fields });
  };

  const creds = relayCredentials(ca, options.dataDir);
  const h2 = http2.createServer(serverSessionOptions);
  // The Domain a session's certificate speaks for: emit("connection") creates the session
  // synchronously, so `connecting` names it while the "session" event runs.
  const domainOf = new WeakMap<Http2Session, string>();
  let connecting = "";
  h2.on("session", (session) => {
    domainOf.set(session, connecting);
    session.on("error", () => {});
    session.once("connect", () => session.setLocalWindowSize(SESSION_WINDOW));
  });
  h2.on("stream", (stream, headers) => {
    stream.on("error", () => {});
    const domain = stream.session ? (domainOf.get(stream.session) ?? "") : "";
    void forward(
      domain,
      stream,
      String(headers[":authority"] ?? ""),
      String(headers[SOURCE_HEADER] ?? ""),
    ).catch((error: unknown) => {
      if (!stream.destroyed && !stream.headersSent)
        stream.respond({ ":status": 502, [REASON_HEADER]: String(error) }, { endStream: true });
    });
  });

  async function forward(
    domain: string,
    stream: ServerHttp2Stream,
    target: string,
    source: string,
  ): Promise<void> {
    const deny = (status: number, reason: string, audit: string) => {
      refuse(audit, { domain, source, target });
      if (!stream.destroyed)
        stream.respond({ ":status": status, [REASON_HEADER]: reason }, { endStream: true });
    };
    const to = splitTarget(target);
    if (!to) return deny(403, "bad target", "bad-target");
    const [from, at] = await Promise.all([
      checkHostInDomain(store, domain, source),
      checkHostInDomain(store, domain, to.ip),
    ]);
    if (!from) return deny(403, `${source} is not a member of Domain ${domain}`, "source-not-in-domain");
    if (!at?.cluster)
      return deny(403, `${to.ip} is not a member of Domain ${domain}`, "target-not-in-domain");
    const candidates = links.get(domain)?.get(namespaceFor(at.cluster)) ?? [];
    const link = candidates.find((l) => !l.session.closed && !l.session.destroyed);
    if (!link)
      return deny(503, `no nodeserver of cluster ${at.cluster} is connected`, "target-cluster-offline");
    const out = link.session.request(
      { ":method": "CONNECT", ":authority": target, [SOURCE_HEADER]: source },
      { endStream: false },
    );
    out.on("error", () => {});
    const status = await new Promise<number>((resolve) => {
      out.once("response", (h) => resolve(Number(h[":status"])));
      out.once("close", () => resolve(502));
    });
    if (stream.destroyed) return void out.destroy();
    if (status !== 200) {
      out.destroy();
      stream.respond(
        { ":status": status, [REASON_HEADER]: `the target's nodeserver answered ${status}` },
        { endStream: true },
      );
      return;
    }
    stream.respond({ ":status": 200 });
    counters.streams++;
    const bytes = bytesTotal.labels({ domain });
    splice(stream, out, (_fromSource, n) => {
      counters.relayedBytes += n;
      bytes.inc(n);
    });
  }

  function acceptLink(socket: TLSSocket, domain: string): void {
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf(10);
      if (end < 0) {
        if (buffered.length > MAX_HELLO_BYTES) socket.destroy();
        return;
      }
      socket.off("data", onData);
      socket.pause();
      let hello: AcceptHello;
      try {
        hello = JSON.parse(buffered.subarray(0, end).toString("utf8"));
        if (typeof hello.globalNamespace !== "string") throw new Error("no globalNamespace");
      } catch (error) {
        refuse("bad-hello", { domain, error: String(error) });
        socket.destroy();
        return;
      }
      void register(socket, domain, hello, buffered.subarray(end + 1));
    };
    socket.on("data", onData);
  }

  async function register(
    socket: TLSSocket,
    domain: string,
    hello: AcceptHello,
    rest: Buffer,
  ): Promise<void> {
    // Only a cluster the Domain has pods in (a DomainPeer there) may take the Domain's traffic.
    const peer = await store.get("DomainPeer", hello.globalNamespace, domain);
    if (!peer) {
      refuse("cluster-not-in-domain", { domain, globalNamespace: hello.globalNamespace });
      socket.destroy();
      return;
    }
    if (rest.length > 0) socket.unshift(rest);
    const session = http2.connect(`https://${domain}.domain`, {
      ...clientSessionOptions,
      createConnection: () => socket,
    });
    session.on("error", () => {});
    session.once("connect", () => session.setLocalWindowSize(SESSION_WINDOW));
    const byCluster = links.get(domain) ?? new Map<string, ReverseLink[]>();
    links.set(domain, byCluster);
    const list = byCluster.get(hello.globalNamespace) ?? [];
    const link = { session, hello };
    // The newest link first: after a nodeserver restart its old link may linger until TCP notices.
    byCluster.set(hello.globalNamespace, [link, ...list]);
    session.once("close", () => {
      const now = (byCluster.get(hello.globalNamespace) ?? []).filter((l) => l !== link);
      if (now.length > 0) byCluster.set(hello.globalNamespace, now);
      else byCluster.delete(hello.globalNamespace);
    });
    logger.info("domain relay: reverse link up", { domain, ...hello });
  }

  const server = tls.createServer({
    key: creds.key,
    cert: creds.cert,
    ca: ca.certPem,
    requestCert: true,
    rejectUnauthorized: true,
    minVersion: "TLSv1.3",
    ALPNProtocols: [ALPN_DIAL, ALPN_ACCEPT],
  });
  server.on("tlsClientError", (error, socket) => {
    refuse("tls", { remote: socket.remoteAddress, error: error.message });
  });
  server.on("secureConnection", (socket: TLSSocket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    socket.setNoDelay(true);
    const raw = socket.getPeerCertificate(false)?.raw;
    let domain: string;
    try {
      if (!raw) throw new Error("no client certificate");
      const identity = ca.verify(new X509Certificate(raw).toString(), { role: "domain" });
      domain = identity.name;
    } catch (error) {
      refuse("certificate", { remote: socket.remoteAddress, error: (error as Error).message });
      socket.destroy();
      return;
    }
    if (socket.alpnProtocol === ALPN_ACCEPT) return acceptLink(socket, domain);
    connecting = domain;
    h2.emit("connection", socket);
    connecting = "";
  });

  return {
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
      });
    },
    stats() {
      const reverseLinks: DomainRelayStats["reverseLinks"] = [];
      for (const [domain, byCluster] of links)
        for (const [globalNamespace, list] of byCluster)
          for (const l of list)
            reverseLinks.push({ domain, globalNamespace, ...(l.hello.node ? { node: l.hello.node } : {}) });
      return { ...counters, reverseLinks };
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
