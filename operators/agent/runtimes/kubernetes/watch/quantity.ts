// Just enough of Kubernetes' resource.Quantity to add requests up: parse to a number of base
// units (millicores for cpu, so sums stay whole numbers) and print back in canonical-ish form.

import { BINARY_SUFFIXES, parseQuantity } from "../../../../lib/quantity.ts";

export { parseQuantity };

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
      const size = BINARY_SUFFIXES[suffix] as number;
      if (units !== 0 && units % size === 0) return `${units / size}${suffix}`;
    }
  }
  return String(units);
}
