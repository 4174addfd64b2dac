// What a fuzz target is, and what counts as a clear refusal.
import type fc from "fast-check";

export interface FuzzTarget<T = unknown> {
  name: string;
  /** The parser and the trust boundary it guards, for --list and the README. */
  about: string;
  input: fc.Arbitrary<T>;
  /**
   * Feeds one input (the `index`th of the run) to the parser the way the product does. Returns
   * when the parser accepted or refused it clearly; anything it throws is a crash (`clearly` lets
   * through only the errors a parser throws by accident).
   */
  run(input: T, index: number): void | Promise<void>;
}

/** Errors a parser throws by accident, never by design: a crash, not a refusal. */
const ACCIDENTS = [TypeError, RangeError, ReferenceError, EvalError, URIError];

export class Crash extends Error {}

/** Runs `parse`; a thrown Error with a message is a clear refusal, anything else a crash. */
export async function clearly<R>(parse: () => R | Promise<R>): Promise<R | undefined> {
  try {
    return await parse();
  } catch (error) {
    if (!(error instanceof Error)) throw new Crash(`threw a non-Error: ${String(error)}`);
    if (ACCIDENTS.some((c) => error.constructor === c) || error.message.trim() === "") {
      throw error;
    }
    return undefined;
  }
}

/** A random mix of the structured input's text and raw bytes with a few flipped. */
export function flip(text: string, at: number, byte: number): Buffer {
  const bytes = Buffer.from(text);
  if (bytes.length === 0) return Buffer.from([byte]);
  bytes[at % bytes.length] = byte;
  return bytes;
}
