import { createCipheriv, generateKeyPairSync, randomBytes } from "node:crypto";
import { SealError } from "./errors.ts";
import { formatSealed, IV_BYTES, MAX_SEALED_PLAIN_BYTES } from "./sealed-text.ts";
import { contentKey, keyId, rawPublicKey, x25519PublicKey } from "./x25519.ts";

/**
 * Encrypts one value to the hub's public key with a fresh ephemeral key, bound to `context`
 * (e.g. `secret/<namespace>/<name>/<key>`), so the text opens only at that place.
 */
export function sealValue(
  plain: Uint8Array | string,
  recipientPublicKeyPem: string,
  context: string,
): string {
  const bytes = typeof plain === "string" ? Buffer.from(plain, "utf8") : Buffer.from(plain);
  if (bytes.length > MAX_SEALED_PLAIN_BYTES) {
    throw new SealError(`value of ${bytes.length} bytes is larger than ${MAX_SEALED_PLAIN_BYTES} bytes`);
  }
  if (context === "") throw new SealError("a sealing context must not be empty");
  const recipient = x25519PublicKey(recipientPublicKeyPem);
  const ephemeral = generateKeyPairSync("x25519");
  const ephemeralRaw = rawPublicKey(ephemeral.publicKey);
  const key = contentKey(ephemeral.privateKey, recipient, ephemeralRaw, rawPublicKey(recipient), context);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(context, "utf8"));
  const ciphertext = Buffer.concat([cipher.update(bytes), cipher.final()]);
  return formatSealed(keyId(recipient), {
    ephemeralPublicKey: ephemeralRaw,
    iv,
    ciphertext,
    tag: cipher.getAuthTag(),
  });
}
