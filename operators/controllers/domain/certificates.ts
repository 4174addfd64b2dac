// Each Domain's key and certificate, signed by the hub CA with role `domain`. The key never goes
// into the store's Domain (which the API serves): it lives in `<dataDir>/pki/domains/<name>.key`
// (0600) and reaches only the DomainPeers of clusters where the Domain has pods.

import { X509Certificate } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
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
  now?: () => number;
}

export class DomainCertificates {
  #pki: CertificateAuthority;
  #dir: string;
  #ttlMs: number;
  #now: () => number;
  #cache = new Map<string, DomainCredentials & { renewAt: number }>();

  constructor(options: DomainCertificatesOptions) {
    this.#pki = options.pki;
    this.#dir = join(options.dataDir, "pki", "domains");
    this.#ttlMs = options.ttlMs ?? 365 * DAY;
    this.#now = options.now ?? Date.now;
  }

  keyPath(domain: string): string {
    return join(this.#dir, `${domain}.key`);
  }

  certPath(domain: string): string {
    return join(this.#dir, `${domain}.crt`);
  }

  /**
   * The Domain's key and a valid certificate for it: created on first use, loaded afterwards,
   * the certificate re-issued (same key) when it is due for renewal, revoked, or not for this key.
   */
  ensure(domain: string): DomainCredentials {
    const cached = this.#cache.get(domain);
    if (cached && this.#now() < cached.renewAt) return cached;
    const keyPath = this.keyPath(domain);
    if (!existsSync(keyPath)) writeFileAtomic(keyPath, generateKeyPair().privateKeyPem, 0o600);
    const keyPem = readFileSync(keyPath, "utf8");
    const certPath = this.certPath(domain);
    let certPem = existsSync(certPath) ? lfPem(readFileSync(certPath, "utf8")) : undefined;
    let window = certPem ? this.#check(domain, certPem, keyPem) : undefined;
    if (!certPem || !window || this.#now() >= renewalTime(window.notBefore, window.notAfter, () => 0.5)) {
      const issued = this.#pki.issue({
        role: "domain",
        name: domain,
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
    this.#cache.set(domain, credentials);
    return credentials;
  }

  /** Forgets the Domain's key and certificate (the Domain is gone). */
  remove(domain: string): void {
    this.#cache.delete(domain);
    rmSync(this.keyPath(domain), { force: true });
    rmSync(this.certPath(domain), { force: true });
  }

  #check(
    domain: string,
    certPem: string,
    keyPem: string,
  ): { notBefore: number; notAfter: number } | undefined {
    try {
      const identity = this.#pki.verify(certPem, { role: "domain" });
      if (identity.name !== domain || identity.publicKeyPem !== publicKeyPem(keyPem)) return undefined;
      // Issued before the relay carried end-to-end TLS: not good for serverAuth, so re-issued.
      if (!new X509Certificate(certPem).keyUsage?.includes(SERVER_AUTH)) return undefined;
      return { notBefore: identity.notBefore, notAfter: identity.notAfter };
    } catch {
      return undefined;
    }
  }
}
