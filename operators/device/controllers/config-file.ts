// Reading a controller's YAML (or JSON) configuration with errors a person can act on: every
// problem names the file, the line and the field ("camera.yaml:7: cameras[0].source.type: …").
// The readers below take `unknown` and return typed values, so nothing unchecked gets through.
import { readFileSync } from "node:fs";
import { isNode, LineCounter, parseDocument } from "yaml";

export type FieldPath = readonly (string | number)[];

export class ConfigError extends Error {}

const MAX_CONFIG_BYTES = 1024 * 1024;

/** A parsed configuration and a way to point at any of its fields. */
export class ConfigSource {
  readonly file: string;
  readonly root: unknown;
  readonly #doc: ReturnType<typeof parseDocument>;
  readonly #lines: LineCounter;

  constructor(file: string, text: string) {
    this.file = file;
    this.#lines = new LineCounter();
    this.#doc = parseDocument(text, { lineCounter: this.#lines, uniqueKeys: true, prettyErrors: false });
    const error = this.#doc.errors[0];
    if (error) {
      const line = this.#lines.linePos(error.pos[0]).line;
      throw new ConfigError(`${file}:${line}: ${error.message.split("\n")[0]}`);
    }
    this.root = this.#doc.toJS();
  }

  static read(file: string): ConfigSource {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (error) {
      throw new ConfigError(`${file}: cannot read the configuration: ${(error as Error).message}`);
    }
    if (Buffer.byteLength(text) > MAX_CONFIG_BYTES) throw new ConfigError(`${file}: larger than 1 MiB`);
    return new ConfigSource(file, text);
  }

  /** An error at `path`, on the line of the deepest part of it that exists. */
  error(path: FieldPath, message: string): ConfigError {
    for (let n = path.length; n >= 0; n--) {
      const node = n === 0 ? this.#doc.contents : this.#doc.getIn(path.slice(0, n), true);
      if (isNode(node) && node.range) {
        const line = this.#lines.linePos(node.range[0]).line;
        return new ConfigError(`${this.file}:${line}: ${formatPath(path)}: ${message}`);
      }
    }
    return new ConfigError(`${this.file}: ${formatPath(path)}: ${message}`);
  }
}

export function formatPath(path: FieldPath): string {
  let out = "";
  for (const part of path) out += typeof part === "number" ? `[${part}]` : out ? `.${part}` : part;
  return out || "(top level)";
}

/** Typed readers of one object of the configuration; each failure names its field. */
export class Fields {
  readonly #source: ConfigSource;
  readonly #path: FieldPath;
  readonly #value: Record<string, unknown>;

  constructor(source: ConfigSource, path: FieldPath, value: unknown, allowed: readonly string[]) {
    this.#source = source;
    this.#path = path;
    if (value === undefined || value === null) value = {};
    if (typeof value !== "object" || Array.isArray(value)) throw source.error(path, "must be a mapping");
    this.#value = value as Record<string, unknown>;
    for (const key of Object.keys(this.#value)) {
      if (!allowed.includes(key))
        throw source.error([...path, key], `unknown field (known: ${allowed.join(", ")})`);
    }
  }

  has(key: string): boolean {
    return this.#value[key] !== undefined && this.#value[key] !== null;
  }

  raw(key: string): unknown {
    return this.#value[key];
  }

  fail(key: string, message: string): ConfigError {
    return this.#source.error([...this.#path, key], message);
  }

  nested(key: string, allowed: readonly string[]): Fields {
    return new Fields(this.#source, [...this.#path, key], this.#value[key], allowed);
  }

  string(key: string, fallback?: string): string {
    const v = this.#value[key] ?? fallback;
    if (typeof v !== "string" || v === "")
      throw this.fail(key, v === undefined ? "is required" : "must be a non-empty string");
    return v;
  }

  optionalString(key: string): string | undefined {
    return this.has(key) ? this.string(key) : undefined;
  }

  oneOf<T extends string>(key: string, choices: readonly T[], fallback?: T): T {
    const v = this.#value[key] ?? fallback;
    if (!choices.includes(v as T)) throw this.fail(key, `must be one of ${choices.join(", ")}`);
    return v as T;
  }

  number(key: string, fallback: number, min: number, max: number): number {
    const v = this.#value[key] ?? fallback;
    if (typeof v !== "number" || !Number.isFinite(v) || v < min || v > max)
      throw this.fail(key, `must be a number from ${min} to ${max}`);
    return v;
  }

  optionalNumber(key: string, min: number, max: number): number | undefined {
    return this.has(key) ? this.number(key, min, min, max) : undefined;
  }

  boolean(key: string, fallback: boolean): boolean {
    const v = this.#value[key] ?? fallback;
    if (typeof v !== "boolean") throw this.fail(key, "must be true or false");
    return v;
  }

  /** A command as a list of strings (argv, no shell). */
  command(key: string, fallback?: readonly string[]): string[] {
    const v = this.#value[key] ?? fallback;
    if (v === undefined) throw this.fail(key, "is required");
    if (!Array.isArray(v) || v.length === 0 || !v.every((a) => typeof a === "string") || v[0] === "")
      throw this.fail(key, "must be a non-empty list of strings (argv; no shell)");
    return [...(v as string[])];
  }

  /** A mapping of strings to strings (environment). */
  stringMap(key: string): Record<string, string> {
    const v = this.#value[key] ?? {};
    if (typeof v !== "object" || v === null || Array.isArray(v)) throw this.fail(key, "must be a mapping");
    const out: Record<string, string> = {};
    for (const [k, value] of Object.entries(v)) {
      if (typeof value !== "string" && typeof value !== "number")
        throw this.#source.error([...this.#path, key, k], "must be a string");
      out[k] = String(value);
    }
    return out;
  }

  list(key: string): unknown[] {
    const v = this.#value[key] ?? [];
    if (!Array.isArray(v)) throw this.fail(key, "must be a list");
    return v;
  }

  get path(): FieldPath {
    return this.#path;
  }

  get source(): ConfigSource {
    return this.#source;
  }
}

/** Process restart settings shared by both controllers (`restart:` in their configuration). */
export interface RestartPolicy {
  startMs: number;
  stopTimeoutMs: number;
  maxRetries: number;
  backoff: { initialMs: number; maxMs: number; resetAfterMs: number };
}

export const RESTART_FIELDS = [
  "startSeconds",
  "stopTimeoutSeconds",
  "maxRetries",
  "backoffInitialSeconds",
  "backoffMaxSeconds",
  "backoffResetSeconds",
] as const;

export function readRestartPolicy(f: Fields): RestartPolicy {
  const r = f.nested("restart", RESTART_FIELDS);
  const ms = (key: string, fallback: number, min: number, max: number) =>
    Math.round(r.number(key, fallback, min, max) * 1000);
  return {
    startMs: ms("startSeconds", 2, 0, 3600),
    stopTimeoutMs: ms("stopTimeoutSeconds", 10, 0, 3600),
    maxRetries: r.number("maxRetries", 0, 0, 1_000_000),
    backoff: {
      initialMs: ms("backoffInitialSeconds", 1, 0.01, 3600),
      maxMs: ms("backoffMaxSeconds", 60, 0.01, 86400),
      resetAfterMs: ms("backoffResetSeconds", 300, 0, 86400),
    },
  };
}
