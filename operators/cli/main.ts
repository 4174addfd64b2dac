#!/usr/bin/env node
// The `rlark` command: one file per subcommand under operators/cli/, wired here.
import { buildProgram } from "./program.ts";

const program = buildProgram();
await program.parseAsync(process.argv);
