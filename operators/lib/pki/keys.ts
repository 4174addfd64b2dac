import { createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { PkiError } from "./errors.ts";

export interface KeyPair {
  /** PKCS#1 PEM: the form both node-forge and ssh2 parse. Never log it. */
  privateKeyPem: string;
  /** SPKI PEM. */
  publicKeyPem: string;
}

/**
 * RSA-2048 through node:crypto (native, tens of milliseconds; forge's pure-JS generation takes
 * seconds). RSA because forge can only put RSA keys into certificates, and ssh2 reads PKCS#1.
 */
export function generateKeyPair(): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs1", format: "pem" },
  });
  return { privateKeyPem: privateKey, publicKeyPem: publicKey };
}

function rsaPublicKey(key: string | KeyObject): KeyObject {
  let obj: KeyObject;
  try {
    obj = typeof key === "string" ? createPublicKey(key) : key;
  } catch (err) {
    throw new PkiError("invalid-request", `not a public key: ${(err as Error).message}`);
  }
  if (obj.asymmetricKeyType !== "rsa") {
    throw new PkiError("invalid-request", `only RSA keys are supported, got ${obj.asymmetricKeyType}`);
  }
  return obj;
}

/** SPKI PEM of any RSA key form node:crypto reads (PKCS#1/PKCS#8 private, SPKI/PKCS#1 public). */
export function publicKeyPem(key: string | KeyObject): string {
  return rsaPublicKey(key).export({ type: "spki", format: "pem" }).toString();
}

function sshString(buf: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(buf.length);
  return Buffer.concat([len, buf]);
}

function mpint(unsigned: Buffer): Buffer {
  let start = 0;
  while (start < unsigned.length - 1 && unsigned[start] === 0) start++;
  const trimmed = unsigned.subarray(start);
  const first = trimmed[0] ?? 0;
  return sshString(first & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

/**
 * The RFC 4253 `ssh-rsa` public key blob: what an SSH peer sees in the handshake and in
 * publickey auth. Comparing blobs binds an X.509 certificate to an SSH key exactly.
 */
export function sshPublicKeyBlob(key: string | KeyObject): Buffer {
  const jwk = rsaPublicKey(key).export({ format: "jwk" });
  if (typeof jwk.n !== "string" || typeof jwk.e !== "string") {
    throw new PkiError("invalid-request", "RSA key without modulus or exponent");
  }
  return Buffer.concat([
    sshString(Buffer.from("ssh-rsa")),
    mpint(Buffer.from(jwk.e, "base64url")),
    mpint(Buffer.from(jwk.n, "base64url")),
  ]);
}

/** OpenSSH one-line public key (`ssh-rsa AAAA…`), which ssh2's parseKey accepts. */
export function sshPublicKeyLine(key: string | KeyObject): string {
  return `ssh-rsa ${sshPublicKeyBlob(key).toString("base64")}`;
}
