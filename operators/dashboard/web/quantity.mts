// Quantities for the cluster page's bars. Parsing is lib/quantity.ts itself, the hub's own
// parser, served beside these files as lib/quantity.ts (assets.ts, SHARED); the tsconfig's
// rootDirs lets tsc resolve the same relative path against operators/.
import { parseQuantity as parse } from "./lib/quantity.ts";

/** The value of a quantity, undefined when it does not parse. */
export function parseQuantity(value: unknown): number | undefined {
  const parsed = parse(value);
  return Number.isNaN(parsed) ? undefined : parsed;
}

export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value >= 10 || unit === 0 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

export function formatAmount(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(value < 10 ? 2 : 1);
}
