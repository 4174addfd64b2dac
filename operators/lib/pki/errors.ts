/** Why a certificate was refused; callers branch on `code`, people read `message`. */
export type PkiErrorCode =
  | "malformed"
  | "untrusted"
  | "not-yet-valid"
  | "expired"
  | "revoked"
  | "wrong-role"
  | "wrong-cluster"
  | "invalid-request";

export class PkiError extends Error {
  readonly code: PkiErrorCode;

  constructor(code: PkiErrorCode, message: string) {
    super(message);
    this.name = "PkiError";
    this.code = code;
  }
}
