// The hub's certificate authority and the checks every role's certificate goes through.
export {
  type CertificateAuthority,
  type IssuedCertificate,
  type IssueRequest,
  type OpenCaOptions,
  openCertificateAuthority,
} from "./ca.ts";
export { PkiError, type PkiErrorCode } from "./errors.ts";
export { writeFileAtomic } from "./files.ts";
export { certificateFingerprint, fingerprintsEqual } from "./fingerprint.ts";
export { type HostIdentity, openHostIdentity } from "./host-identity.ts";
export type { Expectation, Identity } from "./identity.ts";
export { generateKeyPair, type KeyPair, publicKeyPem, sshPublicKeyBlob, sshPublicKeyLine } from "./keys.ts";
export { lfPem } from "./pem.ts";
export { renewalTime } from "./renewal.ts";
export { RevocationList, type RevokedEntry } from "./revocation.ts";
export { isRole, ROLES, type Role } from "./roles.ts";
export { normalizeSerial, type VerifyOptions, verifyCertificate } from "./verify.ts";
