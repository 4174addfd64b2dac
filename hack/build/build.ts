// `npm run build` (and `prepack`): compiles operators/ to JavaScript in dist/ for the npm package,
// where Node refuses to strip types under node_modules. dist/ sits at the same depth as
// operators/, so every path the code resolves from its own location (../../schemas,
// ../../examples, ../../../fleet/addons, ../../package.json) lands on the same file in the
// checkout and in the installed package. Development runs the .ts sources and never needs this.
import { spawnSync } from "node:child_process";
import { cpSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const root = path.join(import.meta.dirname, "..", "..");
const dist = path.join(root, "dist");

// A stale file from a deleted module would otherwise ship.
rmSync(dist, { recursive: true, force: true });

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const compiled = spawnSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.build.json")], {
  stdio: "inherit",
});
if (compiled.status !== 0) process.exit(compiled.status ?? 1);

// Files tsc does not emit but the code loads at run time from next to itself: the generated
// validators (JavaScript with a .d.ts), the dashboard's browser code, which assets.ts serves
// with its types stripped on the fly (from a string, so node_modules does not matter), and the
// .proto files @grpc/proto-loader reads at run time: the device plugin's vendored kubelet API and
// the device controllers' own.
const copies = [
  path.join("api", "generated", "validators.js"),
  path.join("dashboard", "web"),
  path.join("device", "plugin", "api.proto"),
  path.join("device", "proto"),
];
for (const relative of copies) {
  cpSync(path.join(root, "operators", relative), path.join(dist, relative), {
    recursive: true,
    filter: (source) => path.basename(source) !== "tsconfig.json",
  });
}
