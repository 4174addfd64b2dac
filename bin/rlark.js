#!/usr/bin/env node
// The `rlark` command. Installed from the package, it runs the JavaScript build in dist/ (Node
// does not strip types under node_modules, and the package ships no TypeScript). In a checkout,
// where `npx rlark` finds this file too, it runs the TypeScript sources, so development never
// runs a stale build. Plain JavaScript any Node runs, so an old one gets a sentence, not a stack.
import { existsSync } from "node:fs";

const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 13)) {
  process.stderr.write(`rlark: needs Node.js 22.13 or later (22 or 24 LTS); this is ${process.version}\n`);
  process.exit(1);
}
const sources = new URL("../operators/cli/main.ts", import.meta.url);
await import(existsSync(sources) ? sources.href : "../dist/cli/main.js");
