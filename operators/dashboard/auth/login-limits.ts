// The failed-login policy: a window of attempts per client address and per login name. An
// attempt is counted when it is admitted, before its password is checked (scrypt takes long
// enough for a burst of parallel guesses to arrive meanwhile), and taken back when it succeeds;
// one refused for a limit counts nothing. The per-address limit is the lower one, so one
// source's flood is stopped before it reaches the per-user limit and the user still logs in
// from anywhere else; the per-user limit only stops guessing spread over several addresses,
// which then locks the user out for the rest of the window wherever they log in from.

import { isIPv6 } from "node:net";
import type { Clock } from "../../lib/clock.ts";
import { createRateLimiter } from "./rate-limiter.ts";

export interface LoginLimit {
  /** Failed logins per client address (an IPv6 address by its /64) in a window. */
  max: number;
  windowMs: number;
  /** Failed logins per login name in a window, from all addresses; default 3 × max. */
  maxPerUser?: number;
}

export const DEFAULT_LOGIN_LIMIT: LoginLimit = { max: 10, windowMs: 60_000 };

/** A refusal with its wait, or an admitted attempt: `takeBack` uncounts it (the password was right). */
export type Admission = { retryAfter: number } | { takeBack(): void };

export interface LoginLimits {
  /** Admits and counts an attempt, or says how many seconds until one may come. */
  admit(address: string | undefined, username: string | undefined): Admission;
}

export function createLoginLimits(limit: LoginLimit, clock: Clock): LoginLimits {
  const addresses = createRateLimiter({ max: limit.max, windowMs: limit.windowMs, clock });
  // Kept apart from the addresses, so a spray of addresses cannot push a user's window out.
  const users = createRateLimiter({
    max: limit.maxPerUser ?? 3 * limit.max,
    windowMs: limit.windowMs,
    clock,
  });
  return {
    admit(address, username) {
      const source = sourceKey(address);
      const wait = Math.max(
        addresses.retryAfter(source),
        username === undefined ? 0 : users.retryAfter(username),
      );
      if (wait > 0) return { retryAfter: wait };
      addresses.hit(source);
      if (username !== undefined) users.hit(username);
      return {
        takeBack() {
          addresses.release(source);
          if (username !== undefined) users.release(username);
        },
      };
    },
  };
}

/** The source a limit applies to: IPv4 as it is (also when IPv4-mapped), IPv6 by its /64. */
export function sourceKey(address: string | undefined): string {
  if (!address) return "";
  const plain = address.replace(/%.*$/, "").toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(plain);
  if (mapped) return mapped[1] as string;
  if (!isIPv6(plain)) return plain;
  // Whoever holds one address of a /64 holds all of them.
  const [head = "", tail] = plain.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  // a dotted IPv4 tail stands for two groups
  const rightGroups = right.length + (right.at(-1)?.includes(".") ? 1 : 0);
  const zeros = tail === undefined ? 0 : 8 - left.length - rightGroups;
  const groups = [...left, ...Array<string>(Math.max(0, zeros)).fill("0"), ...right];
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}
