// Resource amounts as integers in thousandths of a unit (cpu "500m" → 500, memory "1Ki" →
// 1_024_000), so sums and differences stay exact where floating point would drift.

import { parseQuantity } from "../../lib/quantity.ts";

/** Resource name → amount in thousandths of a unit. */
export type Amounts = Readonly<Record<string, number>>;

/** Kubernetes counts pods against `allocatable.pods`; a node that does not report it has no such limit. */
export const POD_COUNT = "pods";

/** A quantity in thousandths; NaN for what does not parse. */
export function milli(quantity: unknown): number {
  const value = parseQuantity(quantity);
  return Number.isFinite(value) ? Math.round(value * 1000) : Number.NaN;
}

/** A ResourceList ({ cpu: "2", memory: "4Gi" }) as amounts; unparsable entries are left out. */
export function amounts(list: Readonly<Record<string, unknown>> | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, quantity] of Object.entries(list ?? {})) {
    const value = milli(quantity);
    if (!Number.isNaN(value)) out[name] = value;
  }
  return out;
}

/** a + b, per resource. */
export function add(a: Amounts, b: Amounts): Record<string, number> {
  const out: Record<string, number> = { ...a };
  for (const [name, value] of Object.entries(b)) out[name] = (out[name] ?? 0) + value;
  return out;
}

/** How many times `request` fits into `free` (Infinity for an empty request). */
export function fitCount(request: Amounts, free: Amounts): number {
  let count = Number.POSITIVE_INFINITY;
  for (const name in request) {
    const need = request[name] as number;
    if (need <= 0) continue;
    const have = free[name];
    if (have === undefined) {
      if (name === POD_COUNT) continue;
      return 0;
    }
    count = Math.min(count, Math.floor(have / need));
    if (count <= 0) return 0;
  }
  return count;
}

/** The first resource of `request` that `free` lacks, for messages. */
export function shortfall(request: Amounts, free: Amounts): string | undefined {
  for (const name of Object.keys(request).sort()) {
    const need = request[name] as number;
    if (need <= 0) continue;
    const have = free[name];
    if (have === undefined && name === POD_COUNT) continue;
    if ((have ?? 0) < need) return name;
  }
  return undefined;
}

const BINARY: readonly [string, number][] = [
  ["Ti", 2 ** 40],
  ["Gi", 2 ** 30],
  ["Mi", 2 ** 20],
  ["Ki", 2 ** 10],
];

/** An amount as a person writes it: "500m" cpu, "16Gi" memory, "8" GPUs. */
export function formatAmount(name: string, amount: number): string {
  const value = amount / 1000;
  if (name === "memory" || name.endsWith("storage")) {
    for (const [suffix, size] of BINARY) {
      if (value >= size) {
        const scaled = value / size;
        return `${Number.isInteger(scaled) ? scaled : scaled.toFixed(1)}${suffix}`;
      }
    }
    return String(Math.round(value));
  }
  if (Number.isInteger(value)) return String(value);
  return name === "cpu" ? `${amount}m` : String(Number(value.toFixed(3)));
}

/** "1 nvidia.com/gpu, 4 cpu, 16Gi memory" (pod counts left out: every replica is one). */
export function formatRequest(request: Amounts): string {
  const parts = Object.keys(request)
    .filter((name) => name !== POD_COUNT && (request[name] ?? 0) > 0)
    .sort(byImportance)
    .map((name) => `${formatAmount(name, request[name] as number)} ${name}`);
  return parts.join(", ");
}

/** Accelerators first (they are what is usually short), then cpu and memory, then the rest. */
function byImportance(a: string, b: string): number {
  const rank = (name: string) => (name.includes("/") ? 0 : name === "cpu" ? 1 : name === "memory" ? 2 : 3);
  return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0);
}
