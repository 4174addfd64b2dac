import { X509Certificate } from "node:crypto";
import type { Clock } from "../clock.ts";
import { PkiError } from "./errors.ts";
import type { Expectation, Identity } from "./identity.ts";
import { isRole } from "./roles.ts";

export interface VerifyOptions {
  /** The trust anchor. */
  caCertPem: string;
  clock: Pick<Clock, "now">;
  isRevoked?: (serial: string) => boolean;
}

export function normalizeSerial(serial: string): string {
  const hex = serial.toLowerCase().replace(/[^0-9a-f]/g, "");
  return hex.replace(/^0+(?=.)/, "");
}

function parseSubject(subject: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of subject.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) fields.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return fields;
}

function parse(certPem: string, what: string): X509Certificate {
  try {
    return new X509Certificate(certPem);
  } catch (err) {
    throw new PkiError("malformed", `${what} is not a PEM certificate: ${(err as Error).message}`);
  }
}

/**
 * Checks chain, validity window, revocation, role and cluster, in that order, so the error
 * names the first thing a person has to fix.
 */
export function verifyCertificate(certPem: string, expect: Expectation, options: VerifyOptions): Identity {
  const ca = parse(options.caCertPem, "the CA certificate");
  const cert = parse(certPem, "the certificate");
  if (!cert.checkIssued(ca) || !cert.verify(ca.publicKey)) {
    throw new PkiError(
      "untrusted",
      `certificate for ${JSON.stringify(cert.subject)} is not signed by this CA`,
    );
  }
  const subject = parseSubject(cert.subject);
  const role = subject.get("O");
  const name = subject.get("CN");
  const cluster = subject.get("OU");
  if (!isRole(role) || !name) {
    throw new PkiError(
      "malformed",
      `certificate subject ${JSON.stringify(cert.subject)} has no role or name`,
    );
  }
  const now = options.clock.now();
  const notBefore = cert.validFromDate.getTime();
  const notAfter = cert.validToDate.getTime();
  const serial = normalizeSerial(cert.serialNumber);
  if (now < notBefore) {
    throw new PkiError(
      "not-yet-valid",
      `certificate ${serial} is valid only from ${cert.validFromDate.toISOString()}`,
    );
  }
  if (now > notAfter) {
    throw new PkiError("expired", `certificate ${serial} expired at ${cert.validToDate.toISOString()}`);
  }
  if (options.isRevoked?.(serial)) {
    throw new PkiError("revoked", `certificate ${serial} (${role} ${name}) has been revoked`);
  }
  if (role !== expect.role) {
    throw new PkiError("wrong-role", `certificate ${serial} is for role ${role}, expected ${expect.role}`);
  }
  if (expect.cluster !== undefined && cluster !== expect.cluster) {
    throw new PkiError(
      "wrong-cluster",
      `certificate ${serial} is bound to cluster ${cluster ?? "(none)"}, expected ${expect.cluster}`,
    );
  }
  const identity: Identity = {
    role,
    name,
    serial,
    notBefore,
    notAfter,
    publicKeyPem: cert.publicKey.export({ type: "spki", format: "pem" }).toString(),
  };
  if (cluster !== undefined) identity.cluster = cluster;
  return identity;
}
