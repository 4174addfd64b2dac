// Sealing values to the hub (contract S): X25519 + HKDF-SHA256 + AES-256-GCM with a context that
// binds each value to its place, and the hub's keyring that opens them.
export {
  clusterKubeconfigContext,
  type SealTarget,
  secretValueContext,
  unboundSecretContext,
} from "./contexts.ts";
export { SealError } from "./errors.ts";
export { SealKeyring } from "./keyring.ts";
export { sealValue } from "./seal-value.ts";
export { MAX_SEALED_PLAIN_BYTES, parseSealed, SEALED_PREFIX, sealedKeyId } from "./sealed-text.ts";
export { publicKeyPemId, x25519PublicKey } from "./x25519.ts";
