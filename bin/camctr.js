#!/usr/bin/env node
// The `camctr` command, as the device plugin mounts it into pods (see bin/rlark.js for why a checkout
// runs the TypeScript sources and an installed package the build in dist/).
import { existsSync } from "node:fs";

const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 13)) {
  process.stderr.write(`camctr: needs Node.js 22.13 or later (22 or 24 LTS); this is ${process.version}\n`);
  process.exit(1);
}
const sources = new URL("../operators/device/cli/camctr-main.ts", import.meta.url);
await import(existsSync(sources) ? sources.href : "../dist/device/cli/camctr-main.js");
