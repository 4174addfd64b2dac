// What the validator needs of a parsed manifest document; the parser that makes them lives in
// source/ (manifest-parser.ts).

export interface Position {
  line: number;
  column: number;
}

/** One YAML document of a manifest file, with what is needed to point back into the source. */
export interface ParsedDocument {
  file: string;
  /** 0-based index of the document in its file. */
  index: number;
  value: unknown;
  /** Where the document's content starts. */
  start: Position;
  /**
   * Where the field at a JSON pointer is written. For a field that does not exist (a missing
   * required field) this is its closest existing parent. `key` asks for the key's position
   * (unknown-field errors point at the key, not its value).
   */
  locate(pointer: string, target?: "value" | "key"): Position;
}
