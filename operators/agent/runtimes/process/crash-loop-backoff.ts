// Crash-loop backoff as the kubelet does it: the first restart waits `initialMs`, each further
// consecutive crash doubles the wait up to `maxMs`, and a run that lasted `resetAfterMs` clears
// the streak. Pure, so the schedule is tested without waiting for it.

export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
  resetAfterMs: number;
}

export const kubeletBackoff: BackoffPolicy = { initialMs: 10_000, maxMs: 300_000, resetAfterMs: 600_000 };

/** Delay before the restart that follows the `consecutiveFailures`-th crash in a row (1-based). */
export function restartDelay(policy: BackoffPolicy, consecutiveFailures: number): number {
  const exponent = Math.max(0, consecutiveFailures - 1);
  // Cap the exponent so 2 ** n never overflows into Infinity on a very long crash loop.
  return Math.min(policy.maxMs, policy.initialMs * 2 ** Math.min(exponent, 40));
}

/** The streak after a run of `ranMs` ended: a long enough run forgives earlier crashes. */
export function nextStreak(policy: BackoffPolicy, previousStreak: number, ranMs: number): number {
  return ranMs >= policy.resetAfterMs ? 1 : previousStreak + 1;
}
