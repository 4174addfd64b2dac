// Text from manifests and from the hub's API printed on a terminal. A YAML key or value can hold
// escape sequences (recolour, move the cursor, retitle the window, fake lines of output); here
// every control character (C0, DEL, C1; ESC among them) becomes a visible escape such as \x1b.

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

export function escapeControl(text: string): string {
  return text.replace(
    CONTROL,
    (c) => NAMED[c] ?? `\\x${(c.codePointAt(0) as number).toString(16).padStart(2, "0")}`,
  );
}

/** The same value with every string in it, object keys included, escaped: for text renderers. */
export function escapeStrings<T>(value: T): T {
  if (typeof value === "string") return escapeControl(value) as T;
  if (Array.isArray(value)) return value.map(escapeStrings) as T;
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [escapeControl(k), escapeStrings(v)]),
    ) as T;
  }
  return value;
}

// JSON.stringify escapes C0 but writes DEL and C1 as they are.
const UNESCAPED_IN_JSON = /[\u007f-\u009f]/g;

/** JSON with no raw control character in it; it parses to the same value. */
export function terminalJson(value: unknown, space?: number): string {
  return JSON.stringify(value, null, space).replace(
    UNESCAPED_IN_JSON,
    (c) => `\\u${(c.codePointAt(0) as number).toString(16).padStart(4, "0")}`,
  );
}
