import { SealError } from "./errors.ts";

/** `rlark-sealed:v1:<kid>:<base64url payload>`; the version is part of the prefix so v2 can coexist. */
export const SEALED_PREFIX = "rlark-sealed:v1:";

/** Ephemeral X25519 public key, GCM iv and GCM tag: what a payload holds besides the ciphertext. */
export const EPHEMERAL_KEY_BYTES = 32;
export const IV_BYTES = 12;
export const TAG_BYTES = 16;
const OVERHEAD = EPHEMERAL_KEY_BYTES + IV_BYTES + TAG_BYTES;

/**
 * A Kubernetes Secret holds at most 1 MiB; a sealed value is bounded a little above that in base64
 * so a hostile manifest cannot make the hub decode an unbounded string.
 */
export const MAX_SEALED_PLAIN_BYTES = 1024 * 1024;
const MAX_SEALED_TEXT = SEALED_PREFIX.length + 17 + Math.ceil(((MAX_SEALED_PLAIN_BYTES + OVERHEAD) * 4) / 3);

const KID = /^[0-9a-f]{16}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export interface SealedParts {
  kid: string;
  ephemeralPublicKey: Buffer;
  iv: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

export function formatSealed(kid: string, parts: Omit<SealedParts, "kid">): string {
  const payload = Buffer.concat([parts.ephemeralPublicKey, parts.iv, parts.ciphertext, parts.tag]);
  return `${SEALED_PREFIX}${kid}:${payload.toString("base64url")}`;
}

/** Splits a sealed string into its parts, checking the form only (no key needed). */
export function parseSealed(sealed: string): SealedParts {
  if (typeof sealed !== "string") throw new SealError("a sealed value must be a string");
  if (!sealed.startsWith(SEALED_PREFIX)) {
    throw new SealError(`not a sealed value: expected the prefix "${SEALED_PREFIX}"`);
  }
  if (sealed.length > MAX_SEALED_TEXT)
    throw new SealError(`sealed value longer than ${MAX_SEALED_TEXT} characters`);
  const rest = sealed.slice(SEALED_PREFIX.length);
  const colon = rest.indexOf(":");
  const kid = colon < 0 ? rest : rest.slice(0, colon);
  if (colon < 0 || !KID.test(kid))
    throw new SealError("sealed value has no key id (16 lowercase hex digits)");
  const encoded = rest.slice(colon + 1);
  if (!BASE64URL.test(encoded)) throw new SealError("sealed value payload is not base64url");
  const payload = Buffer.from(encoded, "base64url");
  // Non-canonical base64url (stray trailing bits) would decode the same bytes from several texts.
  if (payload.toString("base64url") !== encoded)
    throw new SealError("sealed value payload is not canonical base64url");
  if (payload.length < OVERHEAD) throw new SealError("sealed value payload is truncated");
  return {
    kid,
    ephemeralPublicKey: payload.subarray(0, EPHEMERAL_KEY_BYTES),
    iv: payload.subarray(EPHEMERAL_KEY_BYTES, EPHEMERAL_KEY_BYTES + IV_BYTES),
    ciphertext: payload.subarray(EPHEMERAL_KEY_BYTES + IV_BYTES, payload.length - TAG_BYTES),
    tag: payload.subarray(payload.length - TAG_BYTES),
  };
}

/** The key id of a well-formed sealed string, for checks that have only public keys (CI validate). */
export function sealedKeyId(sealed: string): string {
  return parseSealed(sealed).kid;
}
