// Bounded polling for tests: a condition checked a fixed number of times, never a timed
// assertion. The interval only spaces the checks; the bound is what fails a broken feature.

export interface WaitOptions {
  /** Checks before giving up. Default 1000. */
  attempts?: number;
  /** Milliseconds between checks. Default 5. */
  everyMs?: number;
}

/** Resolves with the first defined (and not false) value `check` returns; throws after the bound. */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  options: WaitOptions = {},
): Promise<T> {
  const attempts = options.attempts ?? 1000;
  const every = options.everyMs ?? 5;
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, every));
  }
  throw new Error(`never happened: ${what}${last instanceof Error ? ` (last error: ${last.message})` : ""}`);
}
