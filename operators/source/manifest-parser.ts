import { constructFromEvents, parseEvents } from "js-yaml";
import {
  type Document,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  parseAllDocuments,
} from "yaml";
import type { Diagnostic, ParsedDocument, Position } from "../api/index.ts";
import { documentOffsets, documentStartOffsets } from "./event-locator.ts";
import { pointerSegments } from "./json-pointer-segments.ts";

/** Limits that keep hostile input (alias bombs, deep nesting) bounded in time and memory. */
export interface ParseLimits {
  /** Alias dereferences per document; the yaml library's own guard against billion-laughs. */
  maxAliasCount: number;
  /** Collection nesting depth; deeper documents are refused before they are built. */
  maxDepth: number;
}

export const DEFAULT_PARSE_LIMITS: ParseLimits = { maxAliasCount: 100, maxDepth: 200 };

export interface ParseResult {
  documents: ParsedDocument[];
  diagnostics: Diagnostic[];
}

/** An anchor anywhere in the text: aliases could expand, so only the guarded parser may read it. */
const ANCHOR = /(^|[\s[{,:-])&[^\s]/m;

/**
 * Parses a manifest file. Most files take a fast path (js-yaml, about 20 times quicker); positions
 * are then worked out lazily, only for documents that get a diagnostic. Files with anchors, and
 * files the fast parser refuses, go through the `yaml` library's document API, which enforces the
 * alias limit and says exactly where and why a file is broken.
 */
export function parseManifestText(
  text: string,
  file: string,
  limits = DEFAULT_PARSE_LIMITS,
  /**
   * Gives the text again when a position is asked for. The loader passes a re-read of the file so
   * that 10,000 valid documents do not keep 10,000 file texts alive just in case.
   */
  reread: () => string = () => text,
): ParseResult {
  // indexOf first: the regular expression costs more than most files' parse.
  if (!text.includes("&") || !ANCHOR.test(text)) {
    let values: unknown[] | undefined;
    let starts: Position[] = [];
    try {
      // What js-yaml's loadAll does, in two steps: the events also say where each document starts
      // (every object's source-file annotation names its line), so no second parse is needed.
      const events = parseEvents(text, { maxDepth: limits.maxDepth });
      values = constructFromEvents(events, { source: text });
      starts = positionsOf(text, documentStartOffsets(text, events));
    } catch {
      // Broken or unusual YAML: the careful parser below produces the diagnostics.
    }
    if (values) return { documents: fastDocuments(values, starts, reread, file, limits), diagnostics: [] };
  }
  return parseWithPositions(text, file, limits);
}

/** Line and column of ascending offsets, in one pass over the text up to the last. */
function positionsOf(text: string, offsets: readonly number[]): Position[] {
  const positions: Position[] = [];
  let line = 1;
  let lineStart = 0;
  for (const offset of offsets) {
    for (let i = text.indexOf("\n", lineStart); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) {
      line++;
      lineStart = i + 1;
    }
    positions.push({ line, column: offset - lineStart + 1 });
  }
  return positions;
}

function fastDocuments(
  values: unknown[],
  starts: Position[],
  reread: () => string,
  file: string,
  limits: ParseLimits,
): ParsedDocument[] {
  const locator = new FileLocator(reread, starts, limits.maxDepth);
  const documents: ParsedDocument[] = [];
  values.forEach((value, index) => {
    if (value !== null && value !== undefined) documents.push(new FastDocument(file, index, value, locator));
  });
  return documents;
}

/**
 * A document of the fast path. A class, not an object of closures: a validate of 100,000 documents
 * keeps each until the end, so what one costs is what the whole run costs (four fields here, and
 * one FileLocator per file).
 */
class FastDocument implements ParsedDocument {
  readonly file: string;
  readonly index: number;
  value: unknown;
  readonly #locator: FileLocator;

  constructor(file: string, index: number, value: unknown, locator: FileLocator) {
    this.file = file;
    this.index = index;
    this.value = value;
    this.#locator = locator;
  }

  get start(): Position {
    return this.#locator.startOf(this.index);
  }

  locate(pointer: string, target: "value" | "key" = "value"): Position {
    return this.#locator.locate(this.index, pointer, target);
  }
}

/** Positions in one file, worked out from a re-read of its text only when one is asked for. */
class FileLocator {
  readonly #reread: () => string;
  readonly #maxDepth: number;
  /**
   * Held weakly: the positions of one document's findings come in a burst, and the event tree
   * behind them is as large as the file. Kept strongly, every file with a finding would stay
   * parsed twice until the end of the snapshot; a later ask parses again.
   */
  #located: WeakRef<{ offsets: ReturnType<typeof documentOffsets>; lineStarts: number[] }> | undefined;
  /**
   * Every document's start is asked for (the source-file annotation), a field's place only for a
   * diagnostic: the starts come from the parse and are kept alone, so documents a hub keeps
   * between revisions do not keep their file's whole event stream.
   */
  readonly #starts: Position[];

  constructor(reread: () => string, starts: Position[], maxDepth: number) {
    this.#reread = reread;
    this.#starts = starts;
    this.#maxDepth = maxDepth;
  }

  startOf(index: number): Position {
    const start = this.#starts[index];
    return start ? { ...start } : { line: 1, column: 1 };
  }

  locate(index: number, pointer: string, target: "value" | "key"): Position {
    return this.#at(this.#source().offsets(index)?.locate(pointer, target) ?? 0);
  }

  #source() {
    let cached = this.#located?.deref();
    if (!cached) {
      const text = this.#reread();
      cached = { offsets: documentOffsets(text, this.#maxDepth), lineStarts: lineStartOffsets(text) };
      this.#located = new WeakRef(cached);
    }
    return cached;
  }

  #at(offset: number): Position {
    return positionIn(this.#source().lineStarts, offset);
  }
}

function lineStartOffsets(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  return starts;
}

/** 1-based line and column of an offset, by binary search over line starts. */
function positionIn(lineStarts: number[], offset: number): Position {
  let low = 0;
  let high = lineStarts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if ((lineStarts[mid] as number) <= offset) low = mid;
    else high = mid - 1;
  }
  return { line: low + 1, column: offset - (lineStarts[low] as number) + 1 };
}

function parseWithPositions(text: string, file: string, limits: ParseLimits): ParseResult {
  const diagnostics: Diagnostic[] = [];
  const documents: ParsedDocument[] = [];
  const lineCounter = new LineCounter();
  const fail = (pos: Position, rule: string, message: string) =>
    diagnostics.push({
      file,
      line: pos.line,
      column: pos.column,
      kind: "",
      name: "",
      path: "",
      rule,
      message,
    });

  const tooDeep = findExcessiveNesting(text, limits.maxDepth);
  if (tooDeep !== undefined) {
    lineCounter.addNewLine(0);
    fail(
      positionIn(lineStartOffsets(text), tooDeep),
      "yaml/too-deep",
      `nesting deeper than ${limits.maxDepth} levels; refusing to build the document`,
    );
    return { documents, diagnostics };
  }

  let parsed: Document.Parsed[];
  try {
    parsed = parseAllDocuments(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  } catch (error) {
    fail({ line: 1, column: 1 }, "yaml/syntax", `cannot parse YAML: ${(error as Error).message}`);
    return { documents, diagnostics };
  }
  const at = (offset: number): Position => {
    const pos = lineCounter.linePos(offset);
    return { line: pos.line, column: pos.col };
  };

  parsed.forEach((doc, index) => {
    if (doc.errors.length > 0) {
      for (const error of doc.errors) {
        if (error.code === "DUPLICATE_KEY") {
          const key = /^["']?([^"':\n]*)/.exec(text.slice(error.pos[0], error.pos[0] + 256))?.[1] ?? "";
          fail(at(error.pos[0]), "yaml/duplicate-key", `duplicate key "${key.trim()}" in the same mapping`);
        } else fail(at(error.pos[0]), "yaml/syntax", firstLine(error.message));
      }
      return;
    }
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: limits.maxAliasCount });
    } catch (error) {
      const message = (error as Error).message;
      const rule = /alias/i.test(message) ? "yaml/alias-limit" : "yaml/syntax";
      fail(at(doc.range[0]), rule, firstLine(message));
      return;
    }
    if (value === null || value === undefined) return; // an empty document is no error
    const contents = doc.contents as Node | null;
    const start = at(contents?.range?.[0] ?? doc.range[0]);
    documents.push({
      file,
      index,
      value,
      start,
      locate: (pointer, target = "value") => {
        const offset = offsetOf(doc, pointer, target);
        return offset === undefined ? start : at(offset);
      },
    });
  });
  return { documents, diagnostics };
}

function firstLine(message: string): string {
  return message.split("\n")[0]?.replace(/ at line \d+, column \d+:?$/, "") ?? message;
}

function offsetOf(doc: Document.Parsed, pointer: string, target: "value" | "key"): number | undefined {
  let node: unknown = doc.contents;
  let best: number | undefined = (node as Node | null)?.range?.[0];
  const segments = pointerSegments(pointer);
  for (const [i, segment] of segments.entries()) {
    const last = i === segments.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === segment);
      if (!pair) return best;
      const key = pair.key as Node;
      if (last && target === "key") return key.range?.[0] ?? best;
      node = pair.value;
      // A key with an empty value still has a position: its key.
      best = (node as Node | null)?.range?.[0] ?? key.range?.[0] ?? best;
    } else if (isSeq(node)) {
      const item = node.items[Number(segment)];
      if (item === undefined) return best;
      node = item;
      best = (item as Node | null)?.range?.[0] ?? best;
    } else {
      return best;
    }
  }
  return best;
}

/**
 * A cheap pre-scan for flow-collection nesting ([[[[...) and block indentation depth, both of which
 * make a recursive YAML composer overflow the stack. Returns the offset where the limit is crossed.
 */
function findExcessiveNesting(text: string, maxDepth: number): number | undefined {
  let flowDepth = 0;
  let inQuote: string | undefined;
  let lineStart = true;
  let indent = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (lineStart) {
      if (c === " " || c === "-") {
        indent++;
        continue;
      }
      lineStart = false;
      // Two columns per block level is the tightest common style; half the indentation bounds depth.
      if (indent / 2 > maxDepth * 2) return i;
    }
    if (c === "\n") {
      lineStart = true;
      indent = 0;
      continue;
    }
    if (inQuote) {
      if (c === inQuote && text[i - 1] !== "\\") inQuote = undefined;
      continue;
    }
    if (c === '"' || c === "'") inQuote = c;
    else if (c === "#") {
      const next = text.indexOf("\n", i);
      i = next === -1 ? text.length : next - 1;
    } else if (c === "[" || c === "{") {
      if (++flowDepth > maxDepth) return i;
    } else if (c === "]" || c === "}") flowDepth = Math.max(0, flowDepth - 1);
  }
  return undefined;
}
