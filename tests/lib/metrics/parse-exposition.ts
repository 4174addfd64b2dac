// A strict parser for the Prometheus text format 0.0.4, enough to check what we render:
// every line is a HELP, a TYPE (before its samples) or a sample with well-formed labels.

type Type = "counter" | "gauge" | "histogram" | "summary" | "untyped";

export interface Exposition {
  types: Record<string, Type>;
  samples: { name: string; labels: Record<string, string>; value: number }[];
  value(name: string, labels: Record<string, string>): number | undefined;
}

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/;
const labelPair = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/;

function parseValue(text: string): number {
  if (text === "+Inf") return Number.POSITIVE_INFINITY;
  if (text === "-Inf") return Number.NEGATIVE_INFINITY;
  if (text === "NaN") return Number.NaN;
  if (!/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(text)) throw new Error(`bad sample value "${text}"`);
  return Number(text);
}

function unescapeLabel(value: string): string {
  return value.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
}

function family(name: string, types: Record<string, Type>): string | undefined {
  if (types[name]) return name;
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    const base = name.slice(0, -suffix.length);
    if (name.endsWith(suffix) && types[base] === "histogram") return base;
  }
  return undefined;
}

export function parseExposition(text: string): Exposition {
  if (!text.endsWith("\n")) throw new Error("exposition must end with a newline");
  const types: Record<string, Type> = {};
  const samples: Exposition["samples"] = [];
  for (const [i, line] of text.slice(0, -1).split("\n").entries()) {
    const where = `line ${i + 1}: ${line}`;
    if (line.startsWith("# HELP ")) {
      if (!/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* (?:[^\\\n]|\\\\|\\n)*$/.test(line))
        throw new Error(`bad HELP, ${where}`);
      continue;
    }
    if (line.startsWith("# TYPE ")) {
      const m = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
      if (!m) throw new Error(`bad TYPE, ${where}`);
      if (types[m[1]!]) throw new Error(`duplicate TYPE, ${where}`);
      types[m[1]!] = m[2] as Type;
      continue;
    }
    const m = sampleLine.exec(line);
    if (!m) throw new Error(`bad sample, ${where}`);
    const name = m[1]!;
    if (!family(name, types)) throw new Error(`sample before its TYPE, ${where}`);
    const labels: Record<string, string> = {};
    let rest = m[3] ?? "";
    while (rest !== "") {
      const pair = labelPair.exec(rest);
      if (!pair) throw new Error(`bad labels, ${where}`);
      labels[pair[1]!] = unescapeLabel(pair[2]!);
      rest = rest.slice(pair[0].length);
    }
    samples.push({ name, labels, value: parseValue(m[4]!) });
  }
  return {
    types,
    samples,
    value(name, labels) {
      const want = JSON.stringify(Object.entries(labels).sort());
      return samples.find((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === want)
        ?.value;
    },
  };
}
