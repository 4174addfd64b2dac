#!/usr/bin/env node
// The `rlark` command: one file per subcommand under operators/cli/, loaded by command-table.ts.
import "./quiet-warnings.ts";
import type { Command } from "commander";
import { CliError } from "./cli-error.ts";
import { buildProgramFor } from "./command-table.ts";

// `rlark crds | head`: a reader that stops early is not an error of ours; end quietly, as cat does.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(0);
});

const program = await buildProgramFor(process.argv.slice(2));
let running = "rlark";
program.hook("preAction", (_program, action: Command) => {
  const names: string[] = [];
  for (let c: Command | null = action; c; c = c.parent) names.unshift(c.name());
  running = names.join(" ");
});

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // Failures a user can act on (a port in use, an unreadable file) get one line each, not a stack
  // and not the usage: commander prints that itself for the errors it detects in the command line.
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as NodeJS.ErrnoException).code;
  const hint = code === "EADDRINUSE" ? " (is another hub running? choose another --http or --ssh)" : "";
  for (const line of `${message}${hint}`.split("\n")) process.stderr.write(`${running}: ${line}\n`);
  process.exitCode = error instanceof CliError ? error.exitCode : 1;
}
