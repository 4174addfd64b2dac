import { InvalidArgumentError } from "commander";

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "60s", "2s", "5m", "1h30m", "500ms", "7d" → milliseconds; a commander argument parser. */
export function parseDuration(value: string): number {
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== value) {
    throw new InvalidArgumentError(`"${value}" is not a duration (examples: 500ms, 2s, 5m, 1h30m, 7d)`);
  }
  return parts.reduce(
    (total, [, amount, unit]) => total + Number(amount) * (UNITS[unit as string] as number),
    0,
  );
}
