// The plan's rows read by cluster, then by what they change, in code-point order rather than
// the locale's, so one plan renders alike on every machine.

const compare = (x: string, y: string): number => (x < y ? -1 : x > y ? 1 : 0);

/** A sort order for rows: by cluster, then by `key` of the row. */
export function byClusterThen<T extends { cluster: string }>(
  key: (row: T) => string,
): (a: T, b: T) => number {
  return (a, b) => compare(a.cluster, b.cluster) || compare(key(a), key(b));
}
