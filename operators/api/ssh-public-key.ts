// OpenSSH public key lines (`<type> <base64> [comment]`): the wire format inside the base64 is
// RFC 4253 §6.6 (RSA, DSA), RFC 8709 (Ed25519), RFC 5656 §3.1 (ECDSA) and OpenSSH's PROTOCOL.u2f
// (the sk- keys). A User's key is read here for the validator, which refuses one that does not
// parse, and for its fingerprint, the SHA256 form `ssh-keygen -l` prints, which people compare.
import { createHash, createPublicKey, type JsonWebKey } from "node:crypto";

export interface SshPublicKey {
  type: string;
  /** The wire-format blob: what the bastion compares a login's key with. */
  blob: Buffer;
  comment: string;
  /** `SHA256:<base64 of the blob's SHA-256, unpadded>`, as `ssh-keygen -l` prints it. */
  fingerprint: string;
}

const CURVES: Record<string, { crv: string; bytes: number }> = {
  nistp256: { crv: "P-256", bytes: 32 },
  nistp384: { crv: "P-384", bytes: 48 },
  nistp521: { crv: "P-521", bytes: 66 },
};

/** OpenSSH's smallest RSA modulus (SSH_RSA_MINIMUM_MODULUS_SIZE). */
const MIN_RSA_BITS = 1024;

/** The blob's length-prefixed strings; undefined when a length runs past the end. */
function strings(blob: Buffer): Buffer[] | undefined {
  const out: Buffer[] = [];
  let at = 0;
  while (at < blob.length) {
    if (at + 4 > blob.length) return undefined;
    const length = blob.readUInt32BE(at);
    if (at + 4 + length > blob.length) return undefined;
    out.push(blob.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  return out;
}

const base64url = (bytes: Buffer) => bytes.toString("base64url");

/** Whether node:crypto takes the key (an EC point must lie on its curve). */
function importable(jwk: JsonWebKey): boolean {
  try {
    createPublicKey({ key: jwk, format: "jwk" });
    return true;
  } catch {
    return false;
  }
}

function checkEcdsa(type: string, parts: Buffer[], count: number): string | undefined {
  const curveName = type.replace(/^(sk-)?ecdsa-sha2-/, "").replace(/@openssh\.com$/, "");
  const curve = CURVES[curveName];
  if (!curve || parts.length !== count || parts[1]?.toString("latin1") !== curveName)
    return `its blob is not an ${type} key (a curve name ${curveName} and a point)`;
  const point = parts[2] as Buffer;
  if (point.length !== 1 + 2 * curve.bytes || point[0] !== 4)
    return `its point is not an uncompressed ${curveName} point`;
  const x = point.subarray(1, 1 + curve.bytes);
  const y = point.subarray(1 + curve.bytes);
  if (!importable({ kty: "EC", crv: curve.crv, x: base64url(x), y: base64url(y) }))
    return `its point is not on the ${curveName} curve`;
  return undefined;
}

/** What is wrong with the key material of a blob whose type is `type`, or undefined. */
function checkBlob(type: string, parts: Buffer[]): string | undefined {
  switch (type) {
    case "ssh-ed25519":
    case "sk-ssh-ed25519@openssh.com": {
      const count = type === "ssh-ed25519" ? 2 : 3;
      if (parts.length !== count || parts[1]?.length !== 32)
        return `its blob is not an ${type} key (a 32-byte public key${count === 3 ? " and an application" : ""})`;
      return undefined;
    }
    case "ssh-rsa": {
      const [, e, n] = parts;
      if (parts.length !== 3 || !e || !n) return "its blob is not an ssh-rsa key (an exponent and a modulus)";
      const modulus = n.subarray(n.findIndex((b) => b !== 0));
      if (modulus.length * 8 < MIN_RSA_BITS) return `its RSA modulus is shorter than ${MIN_RSA_BITS} bits`;
      const exponent = e.subarray(e.findIndex((b) => b !== 0));
      if (!importable({ kty: "RSA", n: base64url(modulus), e: base64url(exponent) }))
        return "its RSA exponent or modulus is not a key";
      return undefined;
    }
    case "ssh-dss":
      return parts.length === 5 && parts.every((p) => p.length > 0)
        ? undefined
        : "its blob is not an ssh-dss key (p, q, g and y)";
    case "ecdsa-sha2-nistp256":
    case "ecdsa-sha2-nistp384":
    case "ecdsa-sha2-nistp521":
      return checkEcdsa(type, parts, 3);
    case "sk-ecdsa-sha2-nistp256@openssh.com":
      return checkEcdsa(type, parts, 4);
    default:
      return `${type} is not a key type OpenSSH accepts for users`;
  }
}

/** The key a line holds, or what is wrong with it (a sentence to show next to its file and line). */
export function parseSshPublicKey(line: string): SshPublicKey | { error: string } {
  const [type = "", base64 = "", ...comment] = line.trim().split(/\s+/);
  if (!type || !base64) return { error: "an OpenSSH public key line is <type> <base64> [comment]" };
  const blob = Buffer.from(base64, "base64");
  // Buffer.from skips what is not base64: a line that does not decode whole is not a key.
  if (blob.toString("base64").replace(/=+$/, "") !== base64.replace(/=+$/, ""))
    return { error: "its key is not valid base64" };
  const parts = strings(blob);
  if (!parts || parts.length === 0) return { error: "its base64 does not hold an SSH key blob" };
  const named = (parts[0] as Buffer).toString("latin1");
  if (named !== type) return { error: `the line says ${type} but its blob is a ${named} key` };
  const wrong = checkBlob(type, parts);
  if (wrong) return { error: wrong };
  return { type, blob, comment: comment.join(" "), fingerprint: sshFingerprint(blob) };
}

/** The SHA256 fingerprint of a wire-format key, as `ssh-keygen -l` prints it. */
export function sshFingerprint(blob: Buffer): string {
  return `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
}
