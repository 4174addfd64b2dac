import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { isIP } from "node:net";
import { join } from "node:path";
import forge from "node-forge";
import { type Clock, systemClock } from "../clock.ts";
import { PkiError } from "./errors.ts";
import { writeFileAtomic } from "./files.ts";
import { certificateFingerprint } from "./fingerprint.ts";
import type { Expectation, Identity } from "./identity.ts";
import { generateKeyPair, publicKeyPem } from "./keys.ts";
import { lfPem } from "./pem.ts";
import { RevocationList } from "./revocation.ts";
import { checkName, isRole, type Role } from "./roles.ts";
import { verifyCertificate } from "./verify.ts";

const DAY = 24 * 60 * 60 * 1000;
/** Tolerates clocks that run a little behind the hub's. */
const BACKDATE_MS = 5 * 60 * 1000;

export interface IssueRequest {
  role: Role;
  /** CN: the cluster for agents, a user for ssh-guest/admin, a domain for domain, a host for hub. */
  name: string;
  /** OU; for role agent it defaults to `name`, since an agent is always bound to its cluster. */
  cluster?: string;
  /** Any RSA public key form node:crypto reads. */
  publicKey: string;
  ttlMs: number;
  /**
   * DNS names and IP addresses the certificate serves (subjectAltName; TLS clients ignore the CN).
   * Given, the certificate is also good for serverAuth.
   */
  serverNames?: string[];
}

export interface IssuedCertificate {
  certPem: string;
  serial: string;
  notBefore: number;
  notAfter: number;
}

export interface CertificateAuthority {
  readonly certPem: string;
  /** `sha256:<hex of DER>` for pinning. */
  readonly fingerprint: string;
  issue(request: IssueRequest): IssuedCertificate;
  verify(certPem: string, expect: Expectation): Identity;
  revoke(serial: string, reason: string): void;
  isRevoked(serial: string): boolean;
}

export interface OpenCaOptions {
  /** The CA lives in `<dataDir>/pki/`. */
  dataDir: string;
  /**
   * Where `ca.crt` and `ca.key` are, read-only (a mounted Kubernetes Secret): never created or
   * written there. Default: `<dataDir>/pki`, where they are made on first start.
   */
  caDir?: string;
  clock?: Clock;
  commonName?: string;
  lifetimeMs?: number;
}

function serialHex(): string {
  const bytes = randomBytes(16);
  // A positive INTEGER with no leading zero byte, as RFC 5280 asks.
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x40;
  return bytes.toString("hex");
}

function selfSignedCa(keyPem: string, commonName: string, now: number, lifetimeMs: number): string {
  const key = forge.pki.privateKeyFromPem(keyPem);
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  cert.serialNumber = serialHex();
  cert.validity.notBefore = new Date(now - BACKDATE_MS);
  cert.validity.notAfter = new Date(now + lifetimeMs);
  const attrs = [
    { shortName: "CN", value: commonName },
    { shortName: "O", value: "rlark" },
  ];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.setExtensions([
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  cert.sign(key, forge.md.sha256.create());
  return lfPem(forge.pki.certificateToPem(cert));
}

/** A subjectAltName entry: type 7 (iPAddress) for an IP, 2 (dNSName) for a checked DNS name. */
function altName(name: string): { type: 2; value: string } | { type: 7; ip: string } {
  if (isIP(name)) return { type: 7, ip: name };
  if (!/^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(name))
    throw new PkiError(
      "invalid-request",
      `server name ${JSON.stringify(name)} is neither an IP address nor a DNS name`,
    );
  return { type: 2, value: name };
}

/**
 * Opens the hub CA in `<dataDir>/pki`, creating it on first start: `ca.key` (0600), `ca.crt`
 * and `revoked.json`.
 */
export function openCertificateAuthority(options: OpenCaOptions): CertificateAuthority {
  const clock = options.clock ?? systemClock;
  const dir = join(options.dataDir, "pki");
  const caDir = options.caDir ?? dir;
  const keyPath = join(caDir, "ca.key");
  const certPath = join(caDir, "ca.crt");
  const present = existsSync(keyPath) && existsSync(certPath);
  if (!present && options.caDir !== undefined) {
    throw new Error(
      `${existsSync(certPath) ? keyPath : certPath}: no such file: the CA folder ${caDir} must hold ca.crt and ca.key (PEM)`,
    );
  }
  if (!present) {
    const pair = generateKeyPair();
    const certPem = selfSignedCa(
      pair.privateKeyPem,
      options.commonName ?? "rlark hub CA",
      clock.now(),
      options.lifetimeMs ?? 3650 * DAY,
    );
    writeFileAtomic(keyPath, pair.privateKeyPem, 0o600);
    writeFileAtomic(certPath, certPem, 0o644);
  }
  const keyPem = readFileSync(keyPath, "utf8");
  const certPem = lfPem(readFileSync(certPath, "utf8"));
  const caKey = forge.pki.privateKeyFromPem(keyPem);
  const caCert = forge.pki.certificateFromPem(certPem);
  const revoked = new RevocationList(join(dir, "revoked.json"));
  const fingerprint = certificateFingerprint(certPem);

  return {
    certPem,
    fingerprint,
    issue(request) {
      if (!isRole(request.role))
        throw new PkiError("invalid-request", `unknown role ${String(request.role)}`);
      checkName("name", request.name);
      const cluster = request.cluster ?? (request.role === "agent" ? request.name : undefined);
      if (cluster !== undefined) checkName("cluster", cluster);
      if (!(request.ttlMs > 0)) throw new PkiError("invalid-request", "ttlMs must be positive");
      const cert = forge.pki.createCertificate();
      cert.publicKey = forge.pki.publicKeyFromPem(publicKeyPem(request.publicKey));
      const serial = serialHex();
      cert.serialNumber = serial;
      const issuedAt = clock.now();
      const notBefore = issuedAt - BACKDATE_MS;
      const notAfter = Math.min(issuedAt + request.ttlMs, caCert.validity.notAfter.getTime());
      cert.validity.notBefore = new Date(notBefore);
      cert.validity.notAfter = new Date(notAfter);
      const subject = [
        { shortName: "O", value: request.role },
        { shortName: "CN", value: request.name },
      ];
      if (cluster !== undefined) subject.push({ shortName: "OU", value: cluster });
      cert.setSubject(subject);
      cert.setIssuer(caCert.subject.attributes);
      const serverNames = request.serverNames ?? [];
      cert.setExtensions([
        { name: "basicConstraints", cA: false, critical: true },
        { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
        {
          name: "extKeyUsage",
          clientAuth: true,
          serverAuth: request.role === "hub" || serverNames.length > 0,
        },
        { name: "subjectKeyIdentifier" },
        ...(serverNames.length > 0 ? [{ name: "subjectAltName", altNames: serverNames.map(altName) }] : []),
      ]);
      cert.sign(caKey, forge.md.sha256.create());
      // X.509 times have second precision; report what the certificate actually says.
      return {
        certPem: lfPem(forge.pki.certificateToPem(cert)),
        serial,
        notBefore: cert.validity.notBefore.getTime(),
        notAfter: cert.validity.notAfter.getTime(),
      };
    },
    verify(certPem2, expect) {
      return verifyCertificate(certPem2, expect, {
        caCertPem: certPem,
        clock,
        isRevoked: (serial) => revoked.has(serial),
      });
    },
    revoke(serial, reason) {
      revoked.reload();
      revoked.add(serial, reason, new Date(clock.now()));
    },
    isRevoked(serial) {
      return revoked.has(serial);
    },
  };
}
