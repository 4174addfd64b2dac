import type { Algorithms } from "ssh2";

/**
 * AES-GCM only, on the hub (for agents and OpenSSH users alike) and in the agent. In SSH the
 * client's order decides, and OpenSSH's default order puts chacha20-poly1305 and aes-ctr first:
 * offered, they would be chosen, and ssh2 runs them at half AES-GCM's speed or less
 * (hack/bench/access/hops.ts; docs/tunnel.md, "Throughput"). Clients need AES-GCM: OpenSSH 6.2+,
 * PuTTY 0.76+, Paramiko 3.5+, Go's x/crypto/ssh.
 */
export const CIPHERS: Algorithms["cipher"] = ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com"];
/** Unused with AES-GCM (an AEAD), but always negotiated: encrypt-then-MAC SHA-2 only. */
export const MACS: Algorithms["hmac"] = ["hmac-sha2-256-etm@openssh.com", "hmac-sha2-512-etm@openssh.com"];

export const AGENT_SUBSYSTEM = "rlark-agent";
export const ENROLL_SUBSYSTEM = "rlark-enroll";
export const ENROLL_USER = "enroll";
/** Agents log in as `rlark-agent.<base64url DER of their certificate>`. */
export const AGENT_USER_PREFIX = "rlark-agent.";
/** The tcpip-forward bind an agent requests so the hub can open stream channels to it. */
export const STREAM_BIND_ADDR = "rlark-streams";
export const STREAM_BIND_PORT = 1;
/** Marks the hub's identity inside the enrollment keyboard-interactive instructions. */
export const IDENTITY_MARKER = "rlark-hub-identity/v1";

export const DEFAULT_HEARTBEAT_MS = 10_000;
export const DEFAULT_MISSED_HEARTBEATS = 3;
// A half-open connection is dropped after interval × (countMax + 1) = 30 s without a packet.
export const DEFAULT_KEEPALIVE_MS = 10_000;
export const DEFAULT_KEEPALIVE_COUNT_MAX = 2;

export function agentUsername(certPem: string): string {
  const b64 = certPem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, "").replace(/\s+/g, "");
  return `${AGENT_USER_PREFIX}${Buffer.from(b64, "base64").toString("base64url")}`;
}

export function certFromAgentUsername(username: string): string | undefined {
  if (!username.startsWith(AGENT_USER_PREFIX)) return undefined;
  const der = Buffer.from(username.slice(AGENT_USER_PREFIX.length), "base64url");
  if (der.length === 0) return undefined;
  const lines = der.toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join("\n")}\n-----END CERTIFICATE-----\n`;
}

/** All PEM certificates in a text, in order. */
export function pemCertificates(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}
