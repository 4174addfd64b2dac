import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Clock, systemClock } from "../clock.ts";
import type { CertificateAuthority } from "./ca.ts";
import { writeFileAtomic } from "./files.ts";
import { generateKeyPair } from "./keys.ts";
import { lfPem } from "./pem.ts";
import { renewalTime } from "./renewal.ts";

export interface HostIdentity {
  /** PKCS#1 PEM, the SSH host key. */
  privateKeyPem: string;
  /** Role `hub` certificate over the host key: how agents tie the handshake to the pinned CA. */
  certPem: string;
}

const YEAR = 365 * 24 * 60 * 60 * 1000;

/**
 * The hub's SSH host key and its certificate in `<dataDir>/pki/host.{key,crt}`. Created on
 * first start; the certificate is re-issued (same key) when it is past its renewal time or was
 * issued by another CA.
 */
export function openHostIdentity(options: {
  dataDir: string;
  ca: CertificateAuthority;
  hostName?: string;
  clock?: Clock;
  ttlMs?: number;
}): HostIdentity {
  const clock = options.clock ?? systemClock;
  const dir = join(options.dataDir, "pki");
  const keyPath = join(dir, "host.key");
  const certPath = join(dir, "host.crt");
  if (!existsSync(keyPath)) writeFileAtomic(keyPath, generateKeyPair().privateKeyPem, 0o600);
  const privateKeyPem = readFileSync(keyPath, "utf8");
  let certPem = existsSync(certPath) ? lfPem(readFileSync(certPath, "utf8")) : "";
  let fresh = false;
  if (certPem) {
    try {
      const id = options.ca.verify(certPem, { role: "hub" });
      fresh = clock.now() < renewalTime(id.notBefore, id.notAfter, () => 0.5);
    } catch {
      fresh = false;
    }
  }
  if (!fresh) {
    certPem = options.ca.issue({
      role: "hub",
      name: options.hostName ?? "hub",
      publicKey: privateKeyPem,
      ttlMs: options.ttlMs ?? YEAR,
    }).certPem;
    writeFileAtomic(certPath, certPem, 0o644);
  }
  return { privateKeyPem, certPem };
}
