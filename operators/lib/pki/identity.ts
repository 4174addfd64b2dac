import type { Role } from "./roles.ts";

/** Who a verified certificate speaks for. */
export interface Identity {
  role: Role;
  /** CN: the cluster for agents, the user for ssh-guest and admin, the domain for domain. */
  name: string;
  /** OU: the cluster the identity is bound to, when it is bound to one. */
  cluster?: string;
  /** Hex, lower case, no separators. */
  serial: string;
  notBefore: number;
  notAfter: number;
  /** SPKI PEM of the certified key. */
  publicKeyPem: string;
}

export interface Expectation {
  role: Role;
  cluster?: string;
}
