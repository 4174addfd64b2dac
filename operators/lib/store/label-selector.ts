// Kubernetes label selectors, pure: the string syntax (`a=b,c!=d,e in (x,y),e notin (z),!f,g`)
// and the object form (matchLabels / matchExpressions) compile to the same requirement list.

import { InvalidError } from "./errors.ts";

export type SelectorOperator = "In" | "NotIn" | "Exists" | "DoesNotExist";

export interface LabelSelectorRequirement {
  key: string;
  operator: SelectorOperator;
  values?: string[];
}

/** The object form, as in Deployment.spec.selector. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export interface Requirement {
  key: string;
  operator: SelectorOperator;
  /** Sorted, unique; empty for Exists / DoesNotExist. */
  values: string[];
}

/** A compiled selector: every requirement must hold (AND). No requirements matches everything. */
export interface Selector {
  readonly requirements: readonly Requirement[];
}

export const everything: Selector = { requirements: [] };

const namePart = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A label key: optional DNS-subdomain prefix (≤253) and `/`, then a name of ≤63 characters. */
export function isValidLabelKey(key: string): boolean {
  const slash = key.indexOf("/");
  if (slash === -1) return namePart.test(key);
  const prefix = key.slice(0, slash);
  const name = key.slice(slash + 1);
  return prefix.length > 0 && prefix.length <= 253 && dnsSubdomain.test(prefix) && namePart.test(name);
}

/** A label value: empty, or ≤63 characters of [-A-Za-z0-9_.] starting and ending alphanumeric. */
export function isValidLabelValue(value: string): boolean {
  return value === "" || namePart.test(value);
}

function checkKey(key: string, where: string): string {
  if (!isValidLabelKey(key)) {
    throw new InvalidError(
      `label selector ${where}: "${key}" is not a valid label key (optional DNS prefix and "/", then ≤63 of [-A-Za-z0-9_.], alphanumeric at both ends)`,
    );
  }
  return key;
}

function checkValue(value: string, where: string): string {
  if (!isValidLabelValue(value)) {
    throw new InvalidError(
      `label selector ${where}: "${value}" is not a valid label value (≤63 of [-A-Za-z0-9_.], alphanumeric at both ends)`,
    );
  }
  return value;
}

function requirement(key: string, operator: SelectorOperator, values: string[]): Requirement {
  return { key, operator, values: [...new Set(values)].sort() };
}

/** Splits on commas that are not inside parentheses. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
    if (depth < 0 || depth > 1) throw new InvalidError(`label selector "${text}": unbalanced parentheses`);
  }
  if (depth !== 0) throw new InvalidError(`label selector "${text}": unbalanced parentheses`);
  terms.push(text.slice(start));
  return terms;
}

const setTerm = /^(\S+?)\s+(in|notin)\s*\(([^()]*)\)$/;
const equalityTerm = /^([^\s=!]+)\s*(==|=|!=)\s*(\S*)$/;
const notExistsTerm = /^!\s*(\S+)$/;

/** Parses the Kubernetes string syntax. "" selects everything. Throws InvalidError with the term. */
export function parseSelector(text: string): Selector {
  if (text.trim() === "") return everything;
  const requirements: Requirement[] = [];
  for (const raw of splitTerms(text)) {
    const term = raw.trim();
    const where = `"${text}" term "${term}"`;
    if (term === "") throw new InvalidError(`label selector "${text}": empty term (a stray comma?)`);
    let m = setTerm.exec(term);
    if (m) {
      const [, key = "", op, list = ""] = m;
      const values = list.split(",").map((v) => checkValue(v.trim(), where));
      requirements.push(requirement(checkKey(key, where), op === "in" ? "In" : "NotIn", values));
      continue;
    }
    m = equalityTerm.exec(term);
    if (m) {
      const [, key = "", op, value = ""] = m;
      requirements.push(
        requirement(checkKey(key, where), op === "!=" ? "NotIn" : "In", [checkValue(value, where)]),
      );
      continue;
    }
    m = notExistsTerm.exec(term);
    if (m) {
      requirements.push(requirement(checkKey(m[1] ?? "", where), "DoesNotExist", []));
      continue;
    }
    requirements.push(requirement(checkKey(term, where), "Exists", []));
  }
  return { requirements };
}

/** Compiles the object form. An empty object selects everything. */
export function compileLabelSelector(selector: LabelSelector): Selector {
  const requirements: Requirement[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    requirements.push(
      requirement(checkKey(key, "matchLabels"), "In", [checkValue(value, `matchLabels.${key}`)]),
    );
  }
  for (const [i, expr] of (selector.matchExpressions ?? []).entries()) {
    const where = `matchExpressions[${i}]`;
    const values = expr.values ?? [];
    const key = checkKey(expr.key, where);
    switch (expr.operator) {
      case "In":
      case "NotIn":
        if (values.length === 0)
          throw new InvalidError(`label selector ${where}: ${expr.operator} needs values`);
        requirements.push(
          requirement(
            key,
            expr.operator,
            values.map((v) => checkValue(v, where)),
          ),
        );
        break;
      case "Exists":
      case "DoesNotExist":
        if (values.length > 0)
          throw new InvalidError(`label selector ${where}: ${expr.operator} takes no values`);
        requirements.push(requirement(key, expr.operator, []));
        break;
      default:
        throw new InvalidError(
          `label selector ${where}: unknown operator "${String(expr.operator)}" (In, NotIn, Exists, DoesNotExist)`,
        );
    }
  }
  return { requirements };
}

/** Either form (or nothing, meaning everything) to a compiled selector. */
export function toSelector(input: string | LabelSelector | Selector | undefined): Selector {
  if (input === undefined) return everything;
  if (typeof input === "string") return parseSelector(input);
  if ("requirements" in input) return input;
  return compileLabelSelector(input);
}

export function matchesRequirement(req: Requirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.hasOwn(labels, req.key);
  switch (req.operator) {
    case "Exists":
      return has;
    case "DoesNotExist":
      return !has;
    case "In":
      return has && req.values.includes(labels[req.key] as string);
    case "NotIn":
      // As in Kubernetes: `a!=b` also selects objects without the label a.
      return !has || !req.values.includes(labels[req.key] as string);
  }
}

export function matches(selector: Selector, labels: Readonly<Record<string, string>> | undefined): boolean {
  const l = labels ?? {};
  return selector.requirements.every((req) => matchesRequirement(req, l));
}

function formatRequirement(req: Requirement): string {
  const one = req.values.length === 1;
  switch (req.operator) {
    case "Exists":
      return req.key;
    case "DoesNotExist":
      return `!${req.key}`;
    case "In":
      return one ? `${req.key}=${req.values[0]}` : `${req.key} in (${req.values.join(",")})`;
    case "NotIn":
      return one ? `${req.key}!=${req.values[0]}` : `${req.key} notin (${req.values.join(",")})`;
  }
}

/** The canonical string form; parseSelector(formatSelector(s)) selects exactly what s selects. */
export function formatSelector(selector: Selector): string {
  return selector.requirements.map(formatRequirement).join(",");
}

/**
 * A requirement an index can answer: `key in (values)`. Backends use it to narrow candidates
 * before checking the full selector; picks the one with fewest values.
 */
export function indexableRequirement(selector: Selector): Requirement | undefined {
  let best: Requirement | undefined;
  for (const req of selector.requirements) {
    if (req.operator === "In" && (!best || req.values.length < best.values.length)) best = req;
  }
  return best;
}
