// Kubernetes' own syntax rules (apimachinery's validation and resource packages) that the JSON
// Schemas cannot express: names the hub derives, and quantities it computes with.

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
// resource.Quantity: a signed decimal number with an optional binary, decimal-SI or exponent suffix.
const QUANTITY = /^[+-]?(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/;

/** Why `value` is not a DNS-1123 label (a Kubernetes object name of most kinds), or undefined. */
export function dns1123LabelError(value: string): string | undefined {
  if (value.length > 63) return `must be at most 63 characters (got ${value.length})`;
  if (!DNS1123_LABEL.test(value)) {
    return "must consist of lower case letters, digits and '-', and start and end with a letter or digit";
  }
  return undefined;
}

const BINARY: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
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

/** The numeric value of a quantity ("500m" → 0.5, "2Gi" → 2147483648), or NaN if it does not parse. */
export function parseQuantity(value: unknown): number {
  if (typeof value === "number") return value;
  if (typeof value !== "string" || !QUANTITY.test(value)) return Number.NaN;
  const match = /^([+-]?(?:\d+\.?\d*|\.\d+))(.*)$/.exec(value) as RegExpExecArray;
  const number = Number(match[1]);
  const suffix = match[2] ?? "";
  if (suffix in BINARY) return number * (BINARY[suffix] as number);
  if (suffix in DECIMAL) return number * (DECIMAL[suffix] as number);
  return Number(value); // exponent form: 1e3
}
