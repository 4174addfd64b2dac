// Each member cluster's key and certificate for a Domain, signed by the hub CA with role `domain`,
// the Domain as CN and the cluster as OU: the relay and the peer nodeservers read the cluster
// from the certificate, never from what a nodeserver says, so one cluster's DomainPeer cannot
// speak for another cluster. The keys never go into the store's Domain (which the API serves):
// they live in `<dataDir>/pki/domains/<domain>/<cluster>.key` (0600) and reach only the
// DomainPeer of their own cluster.

import { X509Certificate } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type Clock, systemClock } from "../../lib/clock.ts";
import {
  type CertificateAuthority,
  generateKeyPair,
  lfPem,
  publicKeyPem,
  renewalTime,
  writeFileAtomic,
} from "../../lib/pki/index.ts";

const DAY = 24 * 60 * 60 * 1000;
const SERVER_AUTH = "1.3.6.1.5.5.7.3.1";

export interface DomainCredentials {
  certPem: string;
  /** PKCS#1 PEM. Never log it. */
  keyPem: string;
  notAfter: number;
}

export interface DomainCertificatesOptions {
  pki: CertificateAuthority;
  dataDir: string;
  /** Certificate lifetime; renewed at about two thirds of it. Default 365 days. */
  ttlMs?: number;
  clock?: Clock;
}

export class DomainCertificates {
  #pki: CertificateAuthority;
  #dir: string;
  #ttlMs: number;
  #clock: Clock;
  #cache = new Map<string, DomainCredentials & { renewAt: number }>();

  constructor(options: DomainCertificatesOptions) {
    this.#pki = options.pki;
    this.#dir = join(options.dataDir, "pki", "domains");
    this.#ttlMs = options.ttlMs ?? 365 * DAY;
    this.#clock = options.clock ?? systemClock;
  }

  keyPath(domain: string, cluster: string): string {
    return join(this.#dir, domain, `${cluster}.key`);
  }

  certPath(domain: string, cluster: string): string {
    return join(this.#dir, domain, `${cluster}.crt`);
  }

  /**
   * The cluster's key for the Domain and a valid certificate for it: created on first use, loaded
   * afterwards, the certificate re-issued (same key) when it is due for renewal, revoked, or not
   * for this key, Domain and cluster.
   */
  ensure(domain: string, cluster: string): DomainCredentials {
    const id = `${domain}/${cluster}`;
    const cached = this.#cache.get(id);
    if (cached && this.#clock.now() < cached.renewAt) return cached;
    this.#removeShared(domain);
    const keyPath = this.keyPath(domain, cluster);
    if (!existsSync(keyPath)) writeFileAtomic(keyPath, generateKeyPair().privateKeyPem, 0o600);
    const keyPem = readFileSync(keyPath, "utf8");
    const certPath = this.certPath(domain, cluster);
    let certPem = existsSync(certPath) ? lfPem(readFileSync(certPath, "utf8")) : undefined;
    let window = certPem ? this.#check(domain, cluster, certPem, keyPem) : undefined;
    if (
      !certPem ||
      !window ||
      this.#clock.now() >= renewalTime(window.notBefore, window.notAfter, () => 0.5)
    ) {
      const issued = this.#pki.issue({
        role: "domain",
        name: domain,
        cluster,
        publicKey: publicKeyPem(keyPem),
        ttlMs: this.#ttlMs,
        // Nodeservers of the Domain also serve each other end-to-end TLS through the hub's relay.
        serverNames: [`${domain}.domain`],
      });
      certPem = issued.certPem;
      writeFileAtomic(certPath, certPem, 0o644);
      window = { notBefore: issued.notBefore, notAfter: issued.notAfter };
    }
    const credentials = {
      certPem,
      keyPem,
      notAfter: window.notAfter,
      renewAt: renewalTime(window.notBefore, window.notAfter, () => 0.5),
    };
    this.#cache.set(id, credentials);
    return credentials;
  }

  /** Forgets the credentials of the Domain's clusters not in `clusters` (they have left it). */
  retain(domain: string, clusters: ReadonlySet<string>): void {
    const dir = join(this.#dir, domain);
    const held = existsSync(dir) ? readdirSync(dir) : [];
    for (const file of held) {
      const cluster = file.replace(/\.(key|crt)$/, "");
      if (clusters.has(cluster)) continue;
      this.#cache.delete(`${domain}/${cluster}`);
      rmSync(join(dir, file), { force: true });
    }
  }

  /** Forgets the Domain's keys and certificates (the Domain is gone). */
  remove(domain: string): void {
    for (const id of this.#cache.keys()) if (id.startsWith(`${domain}/`)) this.#cache.delete(id);
    rmSync(join(this.#dir, domain), { recursive: true, force: true });
    this.#removeShared(domain);
  }

  /** The one key all member clusters shared before per-cluster certificates: never handed out again. */
  #removeShared(domain: string): void {
    rmSync(join(this.#dir, `${domain}.key`), { force: true });
    rmSync(join(this.#dir, `${domain}.crt`), { force: true });
  }

  #check(
    domain: string,
    cluster: string,
    certPem: string,
    keyPem: string,
  ): { notBefore: number; notAfter: number } | undefined {
    try {
      const identity = this.#pki.verify(certPem, { role: "domain", cluster });
      if (identity.name !== domain || identity.publicKeyPem !== publicKeyPem(keyPem)) return undefined;
      // Issued before the relay carried end-to-end TLS: not good for serverAuth, so re-issued.
      if (!new X509Certificate(certPem).keyUsage?.includes(SERVER_AUTH)) return undefined;
      return { notBefore: identity.notBefore, notAfter: identity.notAfter };
    } catch {
      return undefined;
    }
  }
}
