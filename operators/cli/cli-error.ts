/**
 * An error the `rlark` command reports as one line and exits with: 2 for usage and I/O errors
 * (a bad flag value, a file or directory that is not there), 1 for everything else. main.ts
 * prints it; commander's usage text is only for errors commander itself detects.
 */
export class CliError extends Error {
  readonly exitCode: 1 | 2;
  constructor(message: string, exitCode: 1 | 2 = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** A usage or I/O error: exit 2. */
export function usageError(message: string): CliError {
  return new CliError(message, 2);
}
