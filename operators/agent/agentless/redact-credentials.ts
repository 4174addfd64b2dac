// An API server may echo what it was sent (the Authorization header) in an error body, and the
// error becomes the Cluster's lastTestMessage (store, API, event stream, status branch) and log
// lines. Every error of an agentless cluster goes through the redactor of its kubeconfig's
// credentials first: the token, the password, Basic's encoding of them, the client key (inline
// and decoded) and the client certificate.
import type { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "../../lib/logger.ts";
import type { DryRunAnswer, DryRunRequest } from "../../lib/tunnel/index.ts";
import type { Runtime, RuntimeSnapshot } from "../runtimes/types.ts";

export type Redact = (text: string) => string;

const REDACTED = "[redacted]";
/** A secret's first characters left at a cut-off end still identify it; shorter ones do not. */
const MIN_TAIL = 6;

/** The strings of `kubeConfig`'s user that must not be repeated anywhere. */
function credentialsOf(kubeConfig: KubeConfig): string[] {
  const user = kubeConfig.getCurrentUser();
  if (!user) return [];
  const out: string[] = [];
  if (user.token) out.push(user.token);
  if (user.password) {
    out.push(user.password);
    if (user.username) out.push(Buffer.from(`${user.username}:${user.password}`).toString("base64"));
  }
  for (const data of [user.keyData, user.certData]) {
    if (!data) continue;
    out.push(data);
    // the decoded PEM, and each of its base64 lines, as a message might quote one
    const pem = Buffer.from(data, "base64").toString("utf8");
    out.push(pem, ...pem.split("\n").filter((line) => line.length >= 16 && !line.startsWith("-----")));
  }
  // longest first, so a secret that contains another is replaced whole
  return [...new Set(out.filter((s) => s.length >= MIN_TAIL))].sort((a, b) => b.length - a.length);
}

/** Replaces each credential, and a credential's beginning where a message was cut off after it. */
export function credentialRedactor(kubeConfig: KubeConfig): Redact {
  const secrets = credentialsOf(kubeConfig);
  return (text) => {
    let out = text;
    for (const secret of secrets) out = out.split(secret).join(REDACTED);
    for (const secret of secrets) {
      const end = out.endsWith("…") ? out.length - 1 : out.length;
      for (let n = Math.min(secret.length - 1, end); n >= MIN_TAIL; n--)
        if (out.slice(end - n, end) === secret.slice(0, n)) {
          out = `${out.slice(0, end - n)}${REDACTED}${out.slice(end)}`;
          break;
        }
    }
    return out;
  };
}

/** `logger` with every message and field redacted (fields that are not strings, as JSON). */
export function redactingLogger(logger: Logger, redact: Redact): Logger {
  const fieldsOf = (fields?: Record<string, unknown>) => {
    if (!fields) return fields;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(fields)) {
      const text = typeof value === "string" ? value : value instanceof Error ? value.message : undefined;
      if (text !== undefined) out[key] = redact(text);
      else {
        const json = JSON.stringify(value);
        out[key] = json !== undefined && redact(json) !== json ? redact(json) : value;
      }
    }
    return out;
  };
  return {
    info: (message, fields) => logger.info(redact(message), fieldsOf(fields)),
    warn: (message, fields) => logger.warn(redact(message), fieldsOf(fields)),
    error: (message, fields) => logger.error(redact(message), fieldsOf(fields)),
  };
}

/** `error` with its message (and an API error's body) redacted; the same object, so its kind and code stay. */
function redactError(error: unknown, redact: Redact): unknown {
  if (typeof error !== "object" || error === null) return typeof error === "string" ? redact(error) : error;
  const e = error as { message?: unknown; body?: unknown };
  try {
    if (typeof e.message === "string") e.message = redact(e.message);
    if (typeof e.body === "string") e.body = redact(e.body);
  } catch {
    return new Error(redact(String(e.message)));
  }
  return error;
}

/** A snapshot's messages (the connectivity test's, each Addon's and Bundle's) redacted. */
function redactSnapshot(snapshot: RuntimeSnapshot, redact: Redact): RuntimeSnapshot {
  const { lastTest, addons, bundles } = snapshot;
  const message = <T extends { message?: string }>(o: T): T =>
    o.message === undefined ? o : { ...o, message: redact(o.message) };
  return {
    ...snapshot,
    ...(lastTest?.message !== undefined
      ? { lastTest: { ...lastTest, message: redact(lastTest.message) } }
      : {}),
    ...(addons
      ? { addons: addons.map((a) => (a.message === undefined ? a : { ...a, message: redact(a.message) })) }
      : {}),
    ...(bundles
      ? {
          bundles: bundles.map((b) => ({
            ...message(b),
            objects: b.objects.map(message),
            ...(b.drift ? { drift: message(b.drift) } : {}),
          })),
        }
      : {}),
  };
}

/** The runtime's facets (runtimes/types.ts): objects whose methods the agent calls too. */
const FACETS = new Set<PropertyKey>(["access", "network", "cluster"]);

/**
 * `runtime` as its agent sees it: what it reports (observe) and every error it or one of its
 * facets throws or rejects with, redacted; the agent turns both into the Cluster's status.
 * Methods run on the runtime (or facet) itself (its private fields). One answer per snapshot, so
 * an unchanged one stays the same object.
 */
export function redactingRuntime<R extends Runtime>(runtime: R, redact: Redact): R {
  let seen: RuntimeSnapshot | undefined;
  let answer: RuntimeSnapshot | undefined;
  const facets = new Map<PropertyKey, object>();
  return redactingMethods(runtime, redact, (target, property, value) => {
    if (property === "observe" && typeof value === "function")
      return () => {
        const snapshot = (value as () => RuntimeSnapshot).call(target);
        if (snapshot !== seen || !answer) {
          seen = snapshot;
          answer = redactSnapshot(snapshot, redact);
        }
        return answer;
      };
    if (FACETS.has(property) && typeof value === "object" && value !== null) {
      const facet = facets.get(property) ?? redactingMethods(value, redact);
      facets.set(property, facet);
      return facet;
    }
    return undefined;
  });
}

/** `object` with every method's errors redacted; `special` answers a property first when it can. */
function redactingMethods<T extends object>(
  object: T,
  redact: Redact,
  special?: (target: T, property: PropertyKey, value: unknown) => unknown,
): T {
  return new Proxy(object, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      const answer = special?.(target, property, value);
      if (answer !== undefined) return answer;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        let result: unknown;
        try {
          result = (value as (...a: unknown[]) => unknown).apply(target, args);
        } catch (error) {
          throw redactError(error, redact);
        }
        return result instanceof Promise
          ? result.catch((error: unknown) => {
              throw redactError(error, redact);
            })
          : result;
      };
    },
  });
}

/** A dry-run handler whose answers' messages, and errors, are redacted: they reach PR comments. */
export function redactingDryRun(
  dryRun: (request: DryRunRequest) => Promise<DryRunAnswer>,
  redact: Redact,
): (request: DryRunRequest) => Promise<DryRunAnswer> {
  return async (request) => {
    let answer: DryRunAnswer;
    try {
      answer = await dryRun(request);
    } catch (error) {
      throw new Error(redact(error instanceof Error ? error.message : String(error)));
    }
    if (answer.state !== "passed") return { ...answer, message: redact(answer.message) };
    return answer.schema ? { ...answer, schema: answer.schema.map(redact) } : answer;
  };
}
