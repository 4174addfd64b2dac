import { createHash, X509Certificate } from "node:crypto";
import { PkiError } from "./errors.ts";

/** `sha256:<hex of the DER>`: what an operator pins with `--ca-hash`. */
export function certificateFingerprint(certPem: string): string {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch (err) {
    throw new PkiError("malformed", `not a PEM certificate: ${(err as Error).message}`);
  }
  return `sha256:${createHash("sha256").update(cert.raw).digest("hex")}`;
}

/** Compares fingerprints leniently about case and the `sha256:` prefix, strictly about the digest. */
export function fingerprintsEqual(a: string, b: string): boolean {
  const norm = (v: string) =>
    v
      .trim()
      .toLowerCase()
      .replace(/^sha256:/, "");
  const x = norm(a);
  return x.length === 64 && x === norm(b);
}
