export interface BackoffOptions {
  initialMs?: number;
  maxMs?: number;
}

/**
 * Exponential backoff, 1 s doubling to 30 s by default, with "equal jitter": half the delay is
 * fixed, half random, so agents that lost the hub together do not return together.
 */
export function backoffDelay(
  attempt: number,
  options: BackoffOptions = {},
  random: () => number = Math.random,
): number {
  const initial = options.initialMs ?? 1000;
  const max = options.maxMs ?? 30_000;
  const base = Math.min(max, initial * 2 ** Math.min(attempt, 30));
  return Math.round(base / 2 + (random() * base) / 2);
}
