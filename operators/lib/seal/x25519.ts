import { createHash, createPublicKey, diffieHellman, hkdfSync, type KeyObject } from "node:crypto";
import { SealError } from "./errors.ts";

/** Raw 32-byte X25519 public key (the JWK `x`), the form a payload carries. */
export function rawPublicKey(key: KeyObject): Buffer {
  const x = key.export({ format: "jwk" }).x;
  if (typeof x !== "string") throw new SealError("not an X25519 key");
  return Buffer.from(x, "base64url");
}

export function publicKeyFromRaw(raw: Buffer): KeyObject {
  try {
    return createPublicKey({
      key: { kty: "OKP", crv: "X25519", x: raw.toString("base64url") },
      format: "jwk",
    });
  } catch {
    throw new SealError("sealed value carries an invalid ephemeral key");
  }
}

/** Reads a recipient public key from PEM and insists on X25519, so RSA or EC keys fail clearly. */
export function x25519PublicKey(pem: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (err) {
    throw new SealError(`not a public key PEM: ${(err as Error).message}`);
  }
  if (key.asymmetricKeyType !== "x25519") {
    throw new SealError(`the hub's sealing key is X25519, this key is ${key.asymmetricKeyType ?? "unknown"}`);
  }
  return key;
}

/** First 16 hex digits of sha256 over the public key's SPKI DER (contract S). */
export function keyId(publicKey: KeyObject): string {
  const der = publicKey.export({ type: "spki", format: "der" });
  return createHash("sha256").update(der).digest("hex").slice(0, 16);
}

/**
 * The AES key for one value. The salt binds both public keys, so a payload re-addressed to another
 * key id does not open; the context is the HKDF info (and the GCM additional data at the caller).
 */
export function contentKey(
  privateKey: KeyObject,
  publicKey: KeyObject,
  ephemeralRaw: Buffer,
  recipientRaw: Buffer,
  context: string,
): Buffer {
  let shared: Buffer;
  try {
    shared = diffieHellman({ privateKey, publicKey });
  } catch {
    throw new SealError("sealed value carries an invalid ephemeral key");
  }
  // X25519 with a low-order point gives all zeroes: refuse instead of deriving from a known secret.
  if (shared.every((b) => b === 0)) throw new SealError("sealed value carries an invalid ephemeral key");
  const salt = Buffer.concat([ephemeralRaw, recipientRaw]);
  return Buffer.from(hkdfSync("sha256", shared, salt, Buffer.from(context, "utf8"), 32));
}

/** The key id of a recipient public key PEM, as sealed strings carry it. */
export function publicKeyPemId(pem: string): string {
  return keyId(x25519PublicKey(pem));
}
