#!/usr/bin/env node
// The `rlark` command: one file per subcommand under operators/cli/, wired in program.ts.
import { CliError } from "./cli-error.ts";
import { buildProgram } from "./program.ts";

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  // Failures a user can act on (a port in use, an unreadable file) get one line, not a stack.
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as NodeJS.ErrnoException).code;
  const hint = code === "EADDRINUSE" ? " (is another hub running? choose another --http or --ssh)" : "";
  process.stderr.write(`rlark: ${message}${hint}\n`);
  process.exitCode = error instanceof CliError ? error.exitCode : 1;
}
