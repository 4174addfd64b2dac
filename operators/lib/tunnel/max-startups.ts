// OpenSSH's MaxStartups for the hub's SSH endpoint: connections not yet logged in are admitted
// freely up to `start`, refused at random from there (with probability `rate` %, rising linearly
// to 100 % at `full`), and always at `full`. A flood of idle sockets then cannot fill every slot
// for good: its own new sockets are dropped as often as anyone's, and each one it holds is closed
// at the login deadline, so a real login keeps a chance at every try.

export interface MaxStartups {
  start: number;
  /** Percent, 0 to 100. */
  rate: number;
  full: number;
}

/**
 * Above what 13 source addresses can hold at the per-address cap (3), so a handful of idle
 * sources never costs anyone a login; OpenSSH's own default is 10:30:100.
 */
export const DEFAULT_MAX_STARTUPS: MaxStartups = { start: 40, rate: 30, full: 120 };

/** `start:rate:full` (OpenSSH's syntax; a single number N means N:100:N). */
export function parseMaxStartups(text: string): MaxStartups {
  const parts = text.split(":");
  const numbers = parts.map((part) => (/^\d{1,6}$/.test(part) ? Number(part) : Number.NaN));
  if ((parts.length !== 1 && parts.length !== 3) || numbers.some(Number.isNaN))
    throw new Error(
      `max startups ${JSON.stringify(text)}: expected start:rate:full (e.g. 40:30:120) or one number`,
    );
  const [start, rate, full] = parts.length === 1 ? [numbers[0], 100, numbers[0]] : numbers;
  const limits = { start: start as number, rate: rate as number, full: full as number };
  if (limits.start < 1) throw new Error(`max startups ${JSON.stringify(text)}: start must be at least 1`);
  if (limits.rate > 100)
    throw new Error(`max startups ${JSON.stringify(text)}: rate is a percent, at most 100`);
  if (limits.full < limits.start)
    throw new Error(`max startups ${JSON.stringify(text)}: full must be at least start`);
  return limits;
}

/** Whether a new connection is refused while `waiting` others have not logged in yet. */
export function dropsStartup(
  waiting: number,
  limits: MaxStartups,
  random: () => number = Math.random,
): boolean {
  if (waiting >= limits.full) return true;
  if (waiting < limits.start) return false;
  const percent =
    limits.rate + ((100 - limits.rate) * (waiting - limits.start)) / (limits.full - limits.start);
  return random() * 100 < percent;
}
