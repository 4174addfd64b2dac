// Turns ajv's error list into SchemaViolations a person can act on: one violation per problem,
// a JSON pointer to the field, a stable rule id, and a message that says what was expected and
// what was found. ajv reports the cascade (every failed branch of an if/then, oneOf, anyOf);
// here it is folded to the single most useful error.
import type { ErrorObject } from "ajv/dist/2020.js";
import { describeValue, escapePointerToken, valueAt } from "./json-pointer.ts";

export interface SchemaViolation {
  /** JSON pointer into the document; "" is the root. */
  path: string;
  /** Stable id, e.g. "schema/enum", "schema/required", "kubernetes/pod-template". */
  rule: string;
  /** For a person. */
  message: string;
}

type AjvError = ErrorObject;

const RULE_KEYWORD = "x-rlark-rule";
const MESSAGE_KEYWORD = "x-rlark-message";
/** A field whose value may be a secret (a plain value where a sealed one belongs): never echoed. */
const SENSITIVE_KEYWORD = "x-rlark-sensitive";

const ruleNames: Record<string, string> = {
  additionalProperties: "additional-property",
  "false schema": "not-allowed",
  not: "not-allowed",
};

function kebab(keyword: string): string {
  return keyword.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

function ruleFor(keyword: string): string {
  return `schema/${ruleNames[keyword] ?? kebab(keyword)}`;
}

function schemaString(schema: unknown, key: string): string | undefined {
  if (schema === null || typeof schema !== "object") return undefined;
  const value = (schema as Record<string, unknown>)[key];
  return typeof value === "string" ? value : undefined;
}

function isWithin(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

function editDistance(a: string, b: string): number {
  const previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = previous[0]!;
    previous[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = previous[j]!;
      const cost = a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1;
      previous[j] = Math.min(above + 1, previous[j - 1]! + 1, diagonal + cost);
      diagonal = above;
    }
  }
  return previous[b.length]!;
}

/** The closest known name, when close enough to be a likely typo. */
export function closest(name: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(name.length / 3)) + 1;
  for (const candidate of candidates) {
    const distance = editDistance(name, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

function propertyNamesOf(schema: unknown): string[] {
  if (schema === null || typeof schema !== "object") return [];
  const properties = (schema as Record<string, unknown>).properties;
  return properties && typeof properties === "object" ? Object.keys(properties) : [];
}

/** A computed message for the exactly-one-runtime rule, naming the section to add or remove. */
function runtimeMessage(task: unknown): string {
  const record = (task ?? {}) as Record<string, unknown>;
  const agentType = String(record.agentType);
  const wanted = agentType.toLowerCase();
  const others = ["kubernetes", "raw", "docker"].filter((s) => s !== wanted && record[s] !== undefined);
  const extra = others.map((s) => JSON.stringify(s)).join(" and ");
  if (record[wanted] === undefined) {
    return `agentType ${agentType} needs a ${JSON.stringify(wanted)} section${extra ? ` instead of ${extra}` : ""}`;
  }
  return `agentType ${agentType} takes only a ${JSON.stringify(wanted)} section; remove ${extra}`;
}

function translate(error: AjvError, root: unknown): SchemaViolation {
  const sensitive = (error.parentSchema as Record<string, unknown> | undefined)?.[SENSITIVE_KEYWORD] === true;
  const got = (): string =>
    sensitive ? "a value not shown here" : describeValue(valueAt(root, error.instancePath));
  const custom = schemaString(error.parentSchema, MESSAGE_KEYWORD);
  const params = error.params as Record<string, unknown>;
  const path = error.instancePath;
  switch (error.keyword) {
    case "required":
      return {
        path,
        rule: ruleFor("required"),
        message: `missing required field ${JSON.stringify(params.missingProperty)}`,
      };
    case "additionalProperties": {
      const name = String(params.additionalProperty);
      const suggestion = closest(name, propertyNamesOf(error.parentSchema));
      return {
        path: `${path}/${escapePointerToken(name)}`,
        rule: ruleFor("additionalProperties"),
        message: `unknown field ${JSON.stringify(name)}${suggestion ? ` (did you mean ${JSON.stringify(suggestion)}?)` : ""}`,
      };
    }
    case "enum":
      return {
        path,
        rule: ruleFor("enum"),
        message: `must be one of ${(params.allowedValues as unknown[]).map(String).join(", ")} (got ${got()})`,
      };
    case "const":
      return {
        path,
        rule: ruleFor("const"),
        message: `must be ${JSON.stringify(params.allowedValue)} (got ${got()})`,
      };
    case "type":
      return { path, rule: ruleFor("type"), message: `must be ${String(params.type)} (got ${got()})` };
    case "false schema":
      return { path, rule: ruleFor("false schema"), message: "field not allowed here" };
    default:
      break;
  }
  // A schema's own message explains its pattern; a length limit is clearer said as a length
  // (except a limit of 0, which is how a schema forbids a value).
  const lengthLimit = error.keyword === "maxLength" || error.keyword === "minLength";
  if (custom && (!lengthLimit || params.limit === 0)) {
    return { path, rule: ruleFor(error.keyword), message: `${custom} (got ${got()})` };
  }
  const limit = params.limit;
  const messages: Record<string, () => string> = {
    pattern: () => `must match ${String(params.pattern)} (got ${got()})`,
    format: () => `must be a valid ${String(params.format)} (got ${got()})`,
    minimum: () => `must be at least ${String(limit)} (got ${got()})`,
    maximum: () => `must be at most ${String(limit)} (got ${got()})`,
    minLength: () => (limit === 1 ? "must not be empty" : `must be at least ${String(limit)} characters`),
    maxLength: () =>
      `must be at most ${String(limit)} characters (got ${String(valueAt(root, path)).length})`,
    minItems: () => (limit === 1 ? "must not be empty" : `must have at least ${String(limit)} items`),
    maxItems: () => `must have at most ${String(limit)} items`,
    uniqueItems: () => `must not repeat items (items ${String(params.j)} and ${String(params.i)} are equal)`,
    not: () => "is not allowed here",
  };
  const message = messages[error.keyword]?.() ?? `${error.message ?? "is invalid"} (got ${got()})`;
  return { path, rule: ruleFor(error.keyword), message };
}

/** Removes ajv's cascades: each problem once, at the most useful place. */
function fold(errors: AjvError[], root: unknown): SchemaViolation[] {
  const dropped = new Set<AjvError>();
  const out: SchemaViolation[] = [];
  const branchErrors = (owner: AjvError, branch: string): AjvError[] => {
    const prefix = owner.schemaPath.slice(0, -owner.keyword.length) + branch;
    return errors.filter(
      (e) => e !== owner && e.schemaPath.startsWith(prefix) && isWithin(e.instancePath, owner.instancePath),
    );
  };

  // if/then with a rule of its own: the whole failed `then` is one violation of that rule.
  for (const error of errors) {
    if (error.keyword !== "if") continue;
    dropped.add(error);
    const rule = schemaString(error.parentSchema, RULE_KEYWORD);
    if (!rule) continue;
    const inner = branchErrors(error, "then");
    for (const e of inner) dropped.add(e);
    const message =
      schemaString(error.parentSchema, MESSAGE_KEYWORD) ??
      (rule === "schema/exactly-one-runtime" ? runtimeMessage(valueAt(root, error.instancePath)) : rule);
    out.push({ path: error.instancePath, rule, message });
  }

  // oneOf/anyOf: keep the branch that got furthest into the document, or one summary.
  for (const error of errors) {
    if (error.keyword !== "oneOf" && error.keyword !== "anyOf") continue;
    dropped.add(error);
    const inner = branchErrors(error, error.keyword).filter((e) => !dropped.has(e));
    if (inner.length === 0) {
      out.push(translate(error, root));
      continue;
    }
    const byBranch = new Map<string, AjvError[]>();
    const prefixLength = error.schemaPath.length + 1;
    for (const e of inner) {
      const branch = e.schemaPath.slice(prefixLength).split("/")[0] ?? "";
      byBranch.set(branch, [...(byBranch.get(branch) ?? []), e]);
    }
    const depth = (list: AjvError[]): number => Math.max(...list.map((e) => e.instancePath.length));
    const branches = [...byBranch.values()].sort((a, b) => depth(b) - depth(a) || a.length - b.length);
    for (const e of inner) dropped.add(e);
    const best = branches[0]!;
    if (depth(best) === error.instancePath.length && best.every((e) => e.keyword === "type")) {
      const types = inner.filter((e) => e.keyword === "type").map((e) => String(e.params.type));
      out.push({
        path: error.instancePath,
        rule: ruleFor("type"),
        message: `must be ${[...new Set(types)].join(" or ")} (got ${describeValue(valueAt(root, error.instancePath))})`,
      });
    } else {
      for (const e of best) out.push(translate(e, root));
    }
  }

  // A key failing propertyNames: ajv reports the key's own errors (without the key when the
  // key schema is a $ref), then a propertyNames error naming the key. Pair them up.
  const keyOf = new Map<AjvError, string>();
  errors.forEach((error, index) => {
    if (error.keyword !== "propertyNames") return;
    const key = String((error.params as Record<string, unknown>).propertyName);
    for (let j = index - 1; j >= 0; j--) {
      const inner = errors[j]!;
      if (inner.instancePath !== error.instancePath || keyOf.has(inner)) break;
      if (["propertyNames", "required", "additionalProperties", "if"].includes(inner.keyword)) break;
      keyOf.set(inner, key);
    }
  });

  for (const error of errors) {
    if (dropped.has(error)) continue;
    if (error.keyword === "propertyNames") continue;
    const name = error.propertyName ?? keyOf.get(error);
    if (typeof name === "string") {
      // An invalid key: point at the key itself, and say it is the key that is wrong.
      const violation = translate(error, root);
      out.push({
        path: `${error.instancePath}/${escapePointerToken(name)}`,
        rule: violation.rule,
        message: `invalid key ${JSON.stringify(name)}: ${violation.message.replace(/ \(got .*\)$/, "")}`,
      });
      continue;
    }
    out.push(translate(error, root));
  }
  return out;
}

/** Document order for list indexes (/tasks/2 before /tasks/10), otherwise by name. */
function comparePaths(a: string, b: string): number {
  const left = a.split("/");
  const right = b.split("/");
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const x = left[i]!;
    const y = right[i]!;
    if (x === y) continue;
    if (/^\d+$/.test(x) && /^\d+$/.test(y)) return Number(x) - Number(y);
    return x < y ? -1 : 1;
  }
  return left.length - right.length;
}

/** Sorts in place, by path in document order, and returns the array. */
export function sortViolations(violations: SchemaViolation[]): SchemaViolation[] {
  return violations.sort((a, b) => comparePaths(a.path, b.path));
}

export function toViolations(errors: readonly ErrorObject[], root: unknown): SchemaViolation[] {
  const folded = fold(errors as AjvError[], root);
  // An empty string also fails its pattern; "must not be empty" says all there is to say.
  const empty = new Set(folded.filter((v) => v.rule === "schema/min-length").map((v) => v.path));
  const seen = new Set<string>();
  const unique: SchemaViolation[] = [];
  for (const v of folded) {
    const key = `${v.path}\u0000${v.rule}\u0000${v.message}`;
    if (seen.has(key) || (v.rule === "schema/pattern" && empty.has(v.path))) continue;
    seen.add(key);
    unique.push(v);
  }
  return sortViolations(unique);
}
