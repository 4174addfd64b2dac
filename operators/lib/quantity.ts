// Kubernetes' resource.Quantity as a number: "500m" → 0.5, "2Gi" → 2147483648, "1e3" → 1000.

const DECIMAL: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};
/** The binary suffixes and their sizes (Ki = 1024 ...). */
export const BINARY_SUFFIXES: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$/;

/** The value of a quantity in base units (cores, bytes, items); NaN when it does not parse. */
export function parseQuantity(quantity: unknown): number {
  if (typeof quantity === "number") return quantity;
  if (typeof quantity !== "string") return Number.NaN;
  const m = QUANTITY.exec(quantity.trim());
  if (!m) return Number.NaN;
  const base = Number(m[1]);
  if (m[2] !== undefined) return base * 10 ** Number(m[2]);
  const suffix = m[3] ?? "";
  return base * (BINARY_SUFFIXES[suffix] ?? DECIMAL[suffix] ?? 1);
}
