import { hash } from "node:crypto";
import { closeSync, fstatSync, openSync, readFileSync } from "node:fs";
import type { Diagnostic, ParsedDocument } from "../api/index.ts";
import { collectManifestFiles, errorCode, type ManifestFile } from "./manifest-files.ts";
import { DEFAULT_PARSE_LIMITS, type ParseLimits, parseManifestText } from "./manifest-parser.ts";

export interface LoadOptions {
  /** Paths in diagnostics are relative to this directory. */
  baseDir: string;
  /** Larger files are refused unread (a manifest is never this big; a log or dataset is). */
  maxFileBytes?: number;
  limits?: ParseLimits;
  /**
   * Receives each document as soon as its file is parsed, in no particular order across files;
   * the documents are then not kept in the result.
   */
  onDocument?: (document: ParsedDocument) => void;
  /**
   * Parses kept from earlier loads by file and content hash: a file whose bytes are the same is
   * not parsed again (the hub's next revision of a large repository reads only what changed).
   */
  cache?: FileCache;
  /**
   * A file's identity without reading it (git's blob id; see tree-blobs.ts), by its real path;
   * undefined: read and hash it. Only with `cache`: a file whose identity the cache holds a parse
   * for is not read at all.
   */
  identity?: (absolute: string) => string | undefined;
}

/** A file's parse, kept for the next load of the same bytes. */
export interface CachedFile {
  result: FileResult;
  /** Where its text is re-read for positions: moved to the file of the load that reuses it. */
  source: { path: string };
}

export interface FileCache {
  /** The parse of `file` (as displayed) when its bytes hashed to `digest`; undefined: parse it. */
  get(file: string, digest: string): CachedFile | undefined;
  /** Offered after each parse; the cache decides what it keeps. */
  set(file: string, digest: string, parsed: CachedFile): void;
}

export interface LoadResult {
  documents: ParsedDocument[];
  /** Files and documents that could not be read or parsed; each is an error. */
  diagnostics: Diagnostic[];
  files: number;
}

export const DEFAULT_MAX_FILE_BYTES = 8 * 1024 * 1024;
/** Files read between two yields to the event loop. */
const YIELD_EVERY = 64;
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Reads and parses every manifest under `paths`, in a stable order (by file, then document index). */
export async function loadManifests(paths: string[], options: LoadOptions): Promise<LoadResult> {
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const limits = options.limits ?? DEFAULT_PARSE_LIMITS;
  const collected = await collectManifestFiles(paths, options.baseDir);
  const perFile: { documents: ParsedDocument[]; diagnostics: Diagnostic[] }[] = new Array(
    collected.files.length,
  );

  // Small files read synchronously are several times faster than through the thread pool; a
  // yield every few files keeps a hub's event loop (tunnels, HTTP) responsive meanwhile.
  for (const [index, file] of collected.files.entries()) {
    if (index % YIELD_EVERY === YIELD_EVERY - 1) await new Promise((resolve) => setImmediate(resolve));
    const result = loadFile(file, maxFileBytes, limits, options.cache, options.identity);
    if (options.onDocument) {
      for (const document of result.documents) options.onDocument(document);
      perFile[index] = { documents: [], diagnostics: result.diagnostics };
    } else perFile[index] = result;
  }

  const documents: ParsedDocument[] = [];
  const diagnostics = [...collected.diagnostics];
  for (const result of perFile) {
    documents.push(...result.documents);
    diagnostics.push(...result.diagnostics);
  }
  return { documents, diagnostics, files: collected.files.length };
}

export interface FileResult {
  documents: ParsedDocument[];
  diagnostics: Diagnostic[];
}

function loadFile(
  file: ManifestFile,
  maxFileBytes: number,
  limits: ParseLimits,
  cache?: FileCache,
  identify?: (absolute: string) => string | undefined,
): FileResult {
  const whole = (rule: string, message: string): FileResult => ({
    documents: [],
    diagnostics: [{ file: file.display, line: 0, column: 0, kind: "", name: "", path: "", rule, message }],
  });
  const known = cache && identify ? identify(file.absolute) : undefined;
  if (known !== undefined) {
    const cached = cache?.get(file.display, known);
    if (cached) {
      cached.source.path = file.absolute;
      return cached.result;
    }
  }
  let bytes: Buffer;
  try {
    const fd = openSync(file.absolute, "r");
    try {
      const { size } = fstatSync(fd);
      if (size > maxFileBytes) {
        return whole(
          "io/too-large",
          `file is ${formatBytes(size)}, over the ${formatBytes(maxFileBytes)} limit for a manifest; move it out of the manifest path`,
        );
      }
      bytes = readFileSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    return whole("io/unreadable", `cannot read file: ${errorCode(error)}`);
  }
  const digest = known ?? (cache ? hash("sha256", bytes) : "");
  const cached = known === undefined ? cache?.get(file.display, digest) : undefined;
  if (cached) {
    cached.source.path = file.absolute;
    return cached.result;
  }
  const nul = bytes.subarray(0, 8192).indexOf(0);
  if (nul !== -1) return whole("io/binary", `binary file (NUL byte at offset ${nul}), not a YAML manifest`);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return whole("io/not-utf8", `not valid UTF-8 (first bad byte at offset ${firstInvalidUtf8(bytes)})`);
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const source = { path: file.absolute };
  const result = parseManifestText(text, file.display, limits, rereader(source, text.length));
  cache?.set(file.display, digest, { result, source });
  return result;
}

/**
 * The file's text again, for positions; "" if it changed meanwhile, so positions degrade, never
 * lie. Made outside loadFile so the closure cannot keep the first copy of the text alive.
 */
function rereader(source: { path: string }, expectedLength: number): () => string {
  return () => rereadText(source.path, expectedLength);
}

function rereadText(file: string, expectedLength: number): string {
  try {
    let text = readFileSync(file, "utf8");
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    return text.length === expectedLength ? text : "";
  } catch {
    return "";
  }
}

function formatBytes(n: number): string {
  return n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : `${(n / 1024).toFixed(1)} KiB`;
}

/** Offset of the first byte that breaks UTF-8, to tell the user where to look. */
function firstInvalidUtf8(bytes: Buffer): number {
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i] as number;
    const extra = b < 0x80 ? 0 : b >> 5 === 0b110 ? 1 : b >> 4 === 0b1110 ? 2 : b >> 3 === 0b11110 ? 3 : -1;
    if (extra < 0) return i;
    for (let k = 1; k <= extra; k++) {
      if (((bytes[i + k] ?? 0) & 0xc0) !== 0x80) return i;
    }
    i += extra + 1;
  }
  return bytes.length;
}
