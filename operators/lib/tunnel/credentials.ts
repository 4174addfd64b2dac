import { existsSync, readFileSync, rmSync } from "node:fs";
import { generateKeyPair, type KeyPair, publicKeyPem, writeFileAtomic } from "../pki/index.ts";

/** What an enrolled agent keeps: its key, its certificate, the CA it trusts and the hub it met. */
export interface AgentCredentials {
  cluster: string;
  /** PKCS#1 PEM. Never log it. */
  privateKeyPem: string;
  certPem: string;
  caCertPem: string;
  /**
   * The hub's host-key certificate, pinned at enrollment and replaced when the hub presents a
   * renewed one: the agent checks the SSH handshake's host key against it before logging in.
   * Missing in credentials from before it existed; the agent then pins the first verified one.
   */
  hubCertPem?: string;
}

/**
 * Where an agent keeps its credentials: a 0600 file for the process runtime, a Secret in
 * rlark-system for the kubernetes runtime (implemented with that runtime).
 */
export interface CredentialStore {
  load(): Promise<AgentCredentials | undefined>;
  save(credentials: AgentCredentials): Promise<void>;
  /**
   * The key to enroll with, made on first use and kept until save(): an agent restarted after an
   * enrollment cut short (a hub killed) asks again with the same key, which the hub certifies
   * again for the same token. Without it the key lives as long as the process.
   */
  enrollmentKey?(): Promise<KeyPair>;
}

export function parseCredentials(value: unknown, where: string): AgentCredentials {
  const v = value as Partial<Record<keyof AgentCredentials, unknown>> | null;
  const fields = ["cluster", "privateKeyPem", "certPem", "caCertPem"] as const;
  if (typeof v !== "object" || v === null || fields.some((f) => typeof v[f] !== "string" || v[f] === "")) {
    throw new Error(`${where}: expected ${fields.join(", ")} as non-empty strings; re-enroll the agent`);
  }
  const hubCertPem = (value as { hubCertPem?: unknown }).hubCertPem;
  if (hubCertPem !== undefined && (typeof hubCertPem !== "string" || hubCertPem === "")) {
    throw new Error(`${where}: hubCertPem must be a non-empty string when present; re-enroll the agent`);
  }
  return {
    cluster: v.cluster as string,
    privateKeyPem: v.privateKeyPem as string,
    certPem: v.certPem as string,
    caCertPem: v.caCertPem as string,
    ...(hubCertPem ? { hubCertPem } : {}),
  };
}

/** One JSON file, mode 0600, replaced atomically so a crash mid-renewal keeps the old identity. */
export function fileCredentialStore(path: string): CredentialStore {
  const pending = `${path}.enrolling.key`;
  return {
    async load() {
      if (!existsSync(path)) return undefined;
      return parseCredentials(JSON.parse(readFileSync(path, "utf8")), path);
    },
    async save(credentials) {
      writeFileAtomic(path, `${JSON.stringify(credentials, null, 2)}\n`, 0o600);
      rmSync(pending, { force: true });
    },
    async enrollmentKey() {
      if (existsSync(pending)) {
        const privateKeyPem = readFileSync(pending, "utf8");
        try {
          return { privateKeyPem, publicKeyPem: publicKeyPem(privateKeyPem) };
        } catch {
          // unreadable (cut mid-write before the atomic rename existed): a fresh one
        }
      }
      const keys = generateKeyPair();
      writeFileAtomic(pending, keys.privateKeyPem, 0o600);
      return keys;
    },
  };
}
