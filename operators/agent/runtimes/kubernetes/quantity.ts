// Just enough of Kubernetes' resource.Quantity to add requests up: parse to a number of base
// units (millicores for cpu, so sums stay whole numbers) and print back in canonical-ish form.

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
const BINARY: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** The value of a quantity string in base units (cores, bytes, items); NaN when malformed. */
export function parseQuantity(text: string): number {
  const m = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$/.exec(
    text.trim(),
  );
  if (!m) return Number.NaN;
  const base = Number(m[1]);
  if (m[2] !== undefined) return base * 10 ** Number(m[2]);
  const suffix = m[3] ?? "";
  return base * (BINARY[suffix] ?? DECIMAL[suffix] ?? 1);
}

/** Adds `quantity` of `resource` into `sums`, kept in millis for cpu and base units otherwise. */
export function addQuantity(sums: Map<string, number>, resource: string, quantity: string, times = 1): void {
  const value = parseQuantity(quantity);
  if (Number.isNaN(value)) return;
  const units = resource === "cpu" ? Math.round(value * 1000) : Math.round(value);
  sums.set(resource, (sums.get(resource) ?? 0) + units * times);
}

/** Prints a sum made by addQuantity: cpu as "1500m" or "2", byte-like amounts with the largest exact binary suffix. */
export function formatQuantity(resource: string, units: number): string {
  if (resource === "cpu") return units % 1000 === 0 ? String(units / 1000) : `${units}m`;
  if (resource === "memory" || resource.endsWith("storage") || resource.startsWith("hugepages-")) {
    for (const suffix of ["Ei", "Pi", "Ti", "Gi", "Mi", "Ki"]) {
      const size = BINARY[suffix]!;
      if (units !== 0 && units % size === 0) return `${units / size}${suffix}`;
    }
  }
  return String(units);
}
