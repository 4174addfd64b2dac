import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { type Clock, systemClock } from "../lib/clock.ts";
import type { CertificateAuthority } from "../lib/pki/index.ts";
import type { EnrollmentHandler } from "../lib/tunnel/index.ts";
import type { TokenStore } from "./enrollment-tokens.ts";

export interface EnrollmentOptions {
  ca: Pick<CertificateAuthority, "issue" | "fingerprint">;
  tokens: TokenStore;
  /** Whether a Cluster of this name is declared in git (the hub's store answers). */
  clusterExists(name: string): boolean | Promise<boolean>;
  clock?: Clock;
  /** Lifetime of agent certificates issued at enrollment. */
  certificateTtlMs?: number;
}

export interface CreatedToken {
  /** Shown once; only its hash is kept. */
  token: string;
  cluster: string;
  expiresAt: number;
  /** `sha256:<hex>` for the agent's `--ca-hash`. */
  caFingerprint: string;
}

export class EnrollmentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EnrollmentError";
  }
}

export interface Enrollment extends EnrollmentHandler {
  createToken(options: { cluster: string; ttlMs: number }): Promise<CreatedToken>;
}

const PREFIX = "rlt";
const DAY = 24 * 60 * 60 * 1000;

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/**
 * Bootstrap tokens (`rlt.<id>.<secret>`): single use, expiring, for a Cluster declared in git.
 * The id finds the record, the secret is compared by hash in constant time.
 */
export function createEnrollment(options: EnrollmentOptions): Enrollment {
  const clock = options.clock ?? systemClock;
  return {
    async createToken({ cluster, ttlMs }) {
      if (!(ttlMs > 0)) throw new EnrollmentError("the token lifetime must be positive");
      if (!(await options.clusterExists(cluster))) {
        throw new EnrollmentError(
          `no Cluster named ${cluster} is declared in git: add clusters/${cluster}.yaml first`,
        );
      }
      const id = randomBytes(6).toString("hex");
      const secret = randomBytes(32).toString("base64url");
      const createdAt = clock.now();
      const expiresAt = createdAt + ttlMs;
      options.tokens.add({ id, hash: sha256(secret), cluster, createdAt, expiresAt });
      return {
        token: `${PREFIX}.${id}.${secret}`,
        cluster,
        expiresAt,
        caFingerprint: options.ca.fingerprint,
      };
    },
    async redeem(token) {
      const [prefix, id, secret, extra] = token.split(".");
      if (prefix !== PREFIX || !id || !secret || extra !== undefined)
        throw new EnrollmentError("malformed token");
      // Taken before it is checked: a wrong secret burns the token, so it cannot be guessed at.
      const record = options.tokens.take(id);
      if (!record) throw new EnrollmentError("unknown or already used token");
      const expected = Buffer.from(record.hash, "hex");
      const actual = Buffer.from(sha256(secret), "hex");
      if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) {
        throw new EnrollmentError("token secret does not match");
      }
      if (clock.now() >= record.expiresAt)
        throw new EnrollmentError(`token expired at ${new Date(record.expiresAt).toISOString()}`);
      if (!(await options.clusterExists(record.cluster))) {
        throw new EnrollmentError(`Cluster ${record.cluster} is no longer declared in git`);
      }
      return record.cluster;
    },
    issue(cluster, publicKeyPem) {
      return options.ca.issue({
        role: "agent",
        name: cluster,
        cluster,
        publicKey: publicKeyPem,
        ttlMs: options.certificateTtlMs ?? 30 * DAY,
      }).certPem;
    },
  };
}
