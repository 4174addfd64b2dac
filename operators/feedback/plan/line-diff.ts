// A unified diff of two texts, line by line, with three lines of context: what a reviewer
// reads under "changed" in the plan. Inputs are small (one object's YAML), so a plain LCS table
// is fast enough and gives the minimal diff.

const CONTEXT = 3;
/** Beyond this many lines on a side the table gets large; show the whole replacement instead. */
const MAX_LINES = 2000;

type Op = { type: " " | "-" | "+"; line: string; a: number; b: number };

function lines(text: string): string[] {
  if (text === "") return [];
  const out = text.split("\n");
  if (out[out.length - 1] === "") out.pop();
  return out;
}

function script(a: string[], b: string[]): Op[] {
  if (a.length > MAX_LINES || b.length > MAX_LINES) {
    return [
      ...a.map((line, i): Op => ({ type: "-", line, a: i, b: 0 })),
      ...b.map((line, j): Op => ({ type: "+", line, a: a.length, b: j })),
    ];
  }
  const width = b.length + 1;
  const table = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i * width + j] =
        a[i] === b[j]
          ? (table[(i + 1) * width + j + 1] as number) + 1
          : Math.max(table[(i + 1) * width + j] as number, table[i * width + j + 1] as number);
    }
  }
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      ops.push({ type: " ", line: a[i] as string, a: i++, b: j++ });
    } else if (
      i < a.length &&
      (j === b.length || (table[(i + 1) * width + j] as number) >= (table[i * width + j + 1] as number))
    ) {
      // Removals before additions, as diff(1) prints them.
      ops.push({ type: "-", line: a[i] as string, a: i++, b: j });
    } else {
      ops.push({ type: "+", line: b[j] as string, a: i, b: j++ });
    }
  }
  return ops;
}

/** `@@ -a,n +b,m @@` hunks; "" when the texts are equal. */
export function unifiedDiff(before: string, after: string): string {
  const ops = script(lines(before), lines(after));
  const changed = ops.map((op, index) => (op.type === " " ? -1 : index)).filter((index) => index >= 0);
  if (changed.length === 0) return "";
  const hunks: [number, number][] = [];
  for (const index of changed) {
    const start = Math.max(0, index - CONTEXT);
    const end = Math.min(ops.length - 1, index + CONTEXT);
    const last = hunks[hunks.length - 1];
    if (last && start <= last[1] + 1) last[1] = end;
    else hunks.push([start, end]);
  }
  const out: string[] = [];
  for (const [start, end] of hunks) {
    const slice = ops.slice(start, end + 1);
    const first = slice[0] as Op;
    const oldCount = slice.filter((op) => op.type !== "+").length;
    const newCount = slice.filter((op) => op.type !== "-").length;
    const oldStart = oldCount === 0 ? first.a : first.a + 1;
    const newStart = newCount === 0 ? first.b : first.b + 1;
    out.push(`@@ -${oldStart},${oldCount} +${newStart},${newCount} @@`);
    for (const op of slice) out.push(`${op.type}${op.line}`);
  }
  return `${out.join("\n")}\n`;
}
