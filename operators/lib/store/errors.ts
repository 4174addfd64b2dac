// Typed store errors. `code` is stable (match on it, not on classes across module copies);
// `status` is the HTTP status a Kubernetes apiserver would answer with.

export type StoreErrorCode = "NotFound" | "AlreadyExists" | "Conflict" | "Expired" | "Invalid";

const statusOf: Record<StoreErrorCode, number> = {
  NotFound: 404,
  AlreadyExists: 409,
  Conflict: 409,
  Expired: 410,
  Invalid: 422,
};

/** Which object an error is about, and for batches which operation failed. */
export interface ErrorSubject {
  kind?: string;
  namespace?: string;
  name?: string;
  /** Index of the failing operation in an applyBatch call. */
  batchIndex?: number;
}

export class StoreError extends Error {
  readonly code: StoreErrorCode;
  readonly status: number;
  readonly subject: ErrorSubject;

  constructor(code: StoreErrorCode, message: string, subject: ErrorSubject = {}) {
    super(message);
    this.name = `${code}Error`;
    this.code = code;
    this.status = statusOf[code];
    this.subject = subject;
  }
}

export class NotFoundError extends StoreError {
  constructor(message: string, subject?: ErrorSubject) {
    super("NotFound", message, subject);
  }
}

export class AlreadyExistsError extends StoreError {
  constructor(message: string, subject?: ErrorSubject) {
    super("AlreadyExists", message, subject);
  }
}

/** A stale resourceVersion or a failed precondition: read again and retry. */
export class ConflictError extends StoreError {
  constructor(message: string, subject?: ErrorSubject) {
    super("Conflict", message, subject);
  }
}

/** The resourceVersion a watch asked for is gone from the event log (HTTP 410): relist. */
export class ExpiredError extends StoreError {
  constructor(message: string, subject?: ErrorSubject) {
    super("Expired", message, subject);
  }
}

export class InvalidError extends StoreError {
  constructor(message: string, subject?: ErrorSubject) {
    super("Invalid", message, subject);
  }
}

function hasCode(error: unknown, code: StoreErrorCode): boolean {
  return error instanceof StoreError && error.code === code;
}

export const isStoreError = (error: unknown): error is StoreError => error instanceof StoreError;
export const isNotFound = (error: unknown): error is NotFoundError => hasCode(error, "NotFound");
export const isAlreadyExists = (error: unknown): error is AlreadyExistsError =>
  hasCode(error, "AlreadyExists");
export const isConflict = (error: unknown): error is ConflictError => hasCode(error, "Conflict");
export const isExpired = (error: unknown): error is ExpiredError => hasCode(error, "Expired");
export const isInvalid = (error: unknown): error is InvalidError => hasCode(error, "Invalid");

/** "Job default/train" or "Job train" for messages. */
export function describe(kind: string, namespace: string | undefined, name: string): string {
  return namespace ? `${kind} ${namespace}/${name}` : `${kind} ${name}`;
}
