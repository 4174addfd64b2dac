import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { type Clock, systemClock } from "../lib/clock.ts";
import { type CertificateAuthority, sshPublicKeyBlob } from "../lib/pki/index.ts";
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

/** The id and secret of `rlt.<id>.<secret>`, or a refusal of its shape. */
function parseToken(token: string): { id: string; secret: string } {
  const [prefix, id, secret, extra] = token.split(".");
  if (prefix !== PREFIX || !id || !secret || extra !== undefined)
    throw new EnrollmentError("malformed token");
  return { id, secret };
}

/**
 * Bootstrap tokens (`rlt.<id>.<secret>`): expiring, for a Cluster declared in git, and bound to the
 * first key they enroll. The id finds the record, the secret is compared by hash in constant time.
 * Until it expires, a token enrolls its first key again with the same certificate (an agent whose
 * enrollment was cut by a hub kill retries with it) and refuses every other key.
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
      const { id, secret } = parseToken(token);
      const record = options.tokens.get(id);
      if (!record) throw new EnrollmentError("unknown or already used token");
      const expected = Buffer.from(record.hash, "hex");
      const actual = Buffer.from(sha256(secret), "hex");
      if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) {
        // A wrong secret burns the token, so it cannot be guessed at.
        options.tokens.take(id);
        throw new EnrollmentError("token secret does not match");
      }
      if (clock.now() >= record.expiresAt)
        throw new EnrollmentError(`token expired at ${new Date(record.expiresAt).toISOString()}`);
      if (!(await options.clusterExists(record.cluster))) {
        throw new EnrollmentError(`Cluster ${record.cluster} is no longer declared in git`);
      }
      return record.cluster;
    },
    issue(cluster, publicKeyPem, token) {
      const { id } = parseToken(token);
      let key: string;
      try {
        key = createHash("sha256").update(sshPublicKeyBlob(publicKeyPem)).digest("hex");
      } catch (err) {
        throw new EnrollmentError(`the public key is not usable: ${(err as Error).message}`);
      }
      const outcome = options.tokens.bind(
        id,
        key,
        clock.now(),
        () =>
          options.ca.issue({
            role: "agent",
            name: cluster,
            cluster,
            publicKey: publicKeyPem,
            ttlMs: options.certificateTtlMs ?? 30 * DAY,
          }).certPem,
      );
      if ("refused" in outcome) throw new EnrollmentError(outcome.refused);
      return outcome.certPem;
    },
  };
}
