// Kubernetes' own name syntax (apimachinery's validation package) for names the JSON Schemas
// cannot check because the hub derives them (`<job>-<task>`).

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Why `value` is not a DNS-1123 label (a Kubernetes object name of most kinds), or undefined. */
export function dns1123LabelError(value: string): string | undefined {
  if (value.length > 63) return `must be at most 63 characters (got ${value.length})`;
  if (!DNS1123_LABEL.test(value)) {
    return "must consist of lower case letters, digits and '-', and start and end with a letter or digit";
  }
  return undefined;
}
