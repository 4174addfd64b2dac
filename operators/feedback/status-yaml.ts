import { stringify } from "yaml";

/** A key whose value must never be written to git, whatever object it sits in. */
const SECRET_KEY =
  /(password|passwd|passphrase|secret|token|privatekey|private_key|apikey|api_key|credentials?)$/i;
/** PEM private keys are dropped by value too, in case a schema names the field plainly ("key"). */
const PRIVATE_KEY_PEM = /-----BEGIN [A-Z ]*PRIVATE KEY-----/;

export interface RenderStatusOptions {
  /** Extra keys to drop (besides the secret-looking ones); `path` is the dotted path of the key. */
  dropKey?: (key: string, path: string) => boolean;
}

function clean(value: unknown, path: string, options: RenderStatusOptions): unknown {
  if (Array.isArray(value)) return value.map((item, i) => clean(item, `${path}[${i}]`, options));
  if (typeof value === "string") return PRIVATE_KEY_PEM.test(value) ? undefined : value;
  if (value === null || typeof value !== "object") return value;
  if (value instanceof Date) return value.toISOString();
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const child = (value as Record<string, unknown>)[key];
    const childPath = path ? `${path}.${key}` : key;
    if (child === undefined || typeof child === "function") continue;
    if (SECRET_KEY.test(key) || options.dropKey?.(key, childPath)) continue;
    const cleaned = clean(child, childPath, options);
    if (cleaned !== undefined) out[key] = cleaned;
  }
  return out;
}

/**
 * Deterministic YAML for a status file: keys sorted at every level, no line folding, and
 * anything that looks like a secret (by key name or PEM content) left out, so the status
 * branch diff shows only real changes and never leaks credentials.
 */
export function renderStatusYaml(object: unknown, options: RenderStatusOptions = {}): string {
  return stringify(clean(object, "", options), { sortMapEntries: true, lineWidth: 0 });
}

/** `status/<kind>/<name>.yaml`, with the namespace as a directory for namespaced objects. */
export function statusDocumentPath(kind: string, name: string, namespace?: string): string {
  const segment = (s: string) => {
    const safe = s.replace(/[^A-Za-z0-9._-]/g, "_");
    return safe === "." || safe === ".." || safe === "" ? "_" : safe;
  };
  const dir = `status/${segment(kind.toLowerCase())}`;
  return namespace ? `${dir}/${segment(namespace)}/${segment(name)}.yaml` : `${dir}/${segment(name)}.yaml`;
}
