// Replaces the production dependencies of an installed rlark package with one esbuild bundle per
// module specifier the package loads, so the agent image carries the code it runs and not the
// rest of @kubernetes/client-node's 25 MB (ADR 0006). rlark's own files stay as they are: every
// path they resolve from their own location (schemas, examples, fleet/addons, the dashboard's
// files, the log writer's entry point) still lands on the same file.
//
// Usage: node hack/images/bundle-deps.ts <prefix>
//   <prefix>/node_modules/rlark is the installed package; every other folder in
//   <prefix>/node_modules is replaced by the vendored bundles.
//
// A specifier the package imports becomes an ES module that re-exports the original's names
// (enumerated by loading the original here), so `import { Command } from "commander"` keeps
// working when the original is CommonJS; a specifier it require()s (the generated validators)
// becomes a CommonJS bundle whose module.exports is the original's. Each bundle holds its whole
// dependency closure: nothing in the image resolves a package by walking node_modules.
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

const prefix = process.argv[2];
if (!prefix) {
  console.error("usage: node hack/images/bundle-deps.ts <prefix with node_modules/rlark>");
  process.exit(2);
}
const modules = path.resolve(prefix, "node_modules");
const packageDir = path.join(modules, "rlark");

/**
 * How rlark's files load one specifier: require()d (the generated validators), or imported with
 * the names they take from it — "*" when a file takes the whole namespace (`import * as`, a
 * dynamic import(), `export *`), so the bundle must export everything.
 */
type Use = { kind: "require" } | { kind: "import"; names: Set<string> };

const BARE = `["']([^"'./][^"']*)["']`;
// The forms tsc emits: `import a, { b as c } from "x"`, `import * as n from "x"`, `import "x"`,
// `export { a } from "x"`, `export * from "x"`, `import("x")`, and require("x").
const STATIC_IMPORT = new RegExp(`\\bimport\\s+([^;"']*?)\\s*from\\s*${BARE}`, "g");
const SIDE_EFFECT_IMPORT = new RegExp(`\\bimport\\s*${BARE}`, "g");
const RE_EXPORT = new RegExp(`\\bexport\\s+(\\*(?:\\s+as\\s+[\\w$]+)?|\\{[^}]*\\})\\s*from\\s*${BARE}`, "g");
const DYNAMIC_IMPORT = new RegExp(`\\bimport\\(\\s*${BARE}\\s*\\)`, "g");
const REQUIRE = new RegExp(`\\brequire\\(\\s*${BARE}\\s*\\)`, "g");

function* javascriptFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* javascriptFiles(file);
    else if (/\.(m|c)?js$/.test(entry.name)) yield file;
  }
}

/** The names an import clause takes: `a, { b as c, type d }` -> default, b; `* as n` -> "*". */
function namesOf(clause: string): string[] {
  if (clause.includes("*")) return ["*"];
  const names: string[] = [];
  const braces = clause.match(/\{([^}]*)\}/);
  const beforeBraces = (braces ? clause.slice(0, braces.index) : clause).replace(/,\s*$/, "").trim();
  if (beforeBraces) names.push("default");
  for (const part of (braces?.[1] ?? "").split(",")) {
    const name = part
      .trim()
      .replace(/^type\s+/, "")
      .split(/\s+as\s+/)[0]
      ?.trim();
    if (name) names.push(name);
  }
  return names;
}

/** Every bare specifier rlark's files load, and how. */
function specifiersInPackage(): Map<string, Use> {
  const uses = new Map<string, Use>();
  const imported = (specifier: string, names: string[]) => {
    if (specifier.startsWith("node:")) return;
    const before = uses.get(specifier) ?? { kind: "import", names: new Set<string>() };
    if (before.kind !== "import") throw new Error(`${specifier} is both imported and required`);
    for (const name of names) before.names.add(name);
    uses.set(specifier, before);
  };
  const required = (specifier: string) => {
    if (specifier.startsWith("node:")) return;
    if (uses.get(specifier)?.kind === "import") throw new Error(`${specifier} is both imported and required`);
    uses.set(specifier, { kind: "require" });
  };
  for (const folder of ["bin", "dist"]) {
    for (const file of javascriptFiles(path.join(packageDir, folder))) {
      const text = readFileSync(file, "utf8");
      for (const [, clause, specifier] of text.matchAll(STATIC_IMPORT))
        imported(specifier as string, namesOf(clause as string));
      for (const [, specifier] of text.matchAll(SIDE_EFFECT_IMPORT)) imported(specifier as string, []);
      for (const [, clause, specifier] of text.matchAll(RE_EXPORT))
        imported(specifier as string, namesOf(clause as string));
      for (const [, specifier] of text.matchAll(DYNAMIC_IMPORT)) imported(specifier as string, ["*"]);
      for (const [, specifier] of text.matchAll(REQUIRE)) required(specifier as string);
    }
  }
  return uses;
}

/** The package a specifier names: `@scope/name` or `name`. */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] as string);
}

/**
 * The entry module esbuild bundles for one specifier. Exporting only the names rlark takes lets
 * esbuild drop the rest (half of @kubernetes/client-node); esbuild maps named imports of a
 * CommonJS module to its module.exports' properties.
 */
async function entryFor(specifier: string, use: Use): Promise<string> {
  const from = JSON.stringify(specifier);
  if (use.kind === "require") return `module.exports = require(${from});\n`;
  let names = [...use.names];
  if (use.names.has("*")) {
    // Loading the original is the only sure way to know a CommonJS module's export names. It is
    // imported from inside the package so the export conditions of an `import` apply.
    names = Object.keys(await importFromPackage(specifier));
  }
  const named = names.filter((name) => name !== "default" && /^[A-Za-z_$][\w$]*$/.test(name)).sort();
  const exported = [...(names.includes("default") ? ["default"] : []), ...named];
  return exported.length > 0 ? `export { ${exported.join(", ")} } from ${from};\n` : `import ${from};\n`;
}

/** Imports a specifier as rlark's own files would (a probe module inside the package). */
async function importFromPackage(specifier: string): Promise<Record<string, unknown>> {
  const probe = path.join(packageDir, `.bundle-deps-probe-${process.pid}.mjs`);
  writeFileSync(probe, "export default (specifier) => import(specifier);\n");
  try {
    const load = (await import(pathToFileURL(probe).href)) as {
      default: (specifier: string) => Promise<Record<string, unknown>>;
    };
    return await load.default(specifier);
  } finally {
    rmSync(probe, { force: true });
  }
}

/** Output file (inside its package folder) for a specifier: the subpath, with the format's extension. */
function outputFor(specifier: string, use: Use): string {
  const name = packageOf(specifier);
  const subpath =
    specifier
      .slice(name.length)
      .replace(/^\//, "")
      .replace(/\.(m|c)?js$/, "") || "index";
  return `${subpath}.${use.kind === "import" ? "mjs" : "cjs"}`;
}

const uses = specifiersInPackage();
const byPackage = new Map<string, Map<string, string>>();
/** Bundle contents by path under node_modules, written once every original has been loaded. */
const bundles = new Map<string, Uint8Array>();
for (const [specifier, use] of uses) {
  const name = packageOf(specifier);
  const output = outputFor(specifier, use);
  const result = await build({
    // An .mjs name gives Node's interop: the default import of a CommonJS module is its module.exports.
    stdin: {
      contents: await entryFor(specifier, use),
      resolveDir: packageDir,
      sourcefile: use.kind === "import" ? "entry.mjs" : "entry.cjs",
      loader: "js",
    },
    bundle: true,
    platform: "node",
    target: "node22",
    format: use.kind === "import" ? "esm" : "cjs",
    minify: true,
    legalComments: "eof",
    // ssh2 and cpu-features try an optional native addon inside try/catch and fall back to
    // JavaScript: the image has no compiler, so the fallback is the code that runs.
    external: ["*.node", "cpu-features"],
    // Bundled CommonJS code calls require() for Node's built-ins; an ES module has no require.
    banner:
      use.kind === "import"
        ? {
            js: [
              "import { createRequire as __rlarkRequire } from 'node:module';",
              "import { fileURLToPath as __rlarkPath } from 'node:url';",
              "const require = __rlarkRequire(import.meta.url);",
              // ssh2's WebAssembly poly1305 (emscripten) asks for its own folder.
              "const __filename = __rlarkPath(import.meta.url), __dirname = __rlarkPath(new URL('.', import.meta.url));",
            ].join(" "),
          }
        : undefined,
    write: false,
    logLevel: "error",
  });
  const exportsMap = byPackage.get(name) ?? new Map<string, string>();
  exportsMap.set(specifier === name ? "." : `./${specifier.slice(name.length + 1)}`, `./${output}`);
  byPackage.set(name, exportsMap);
  const file = result.outputFiles[0];
  if (!file) throw new Error(`esbuild wrote nothing for ${specifier}`);
  bundles.set(`${name}/${output}`, file.contents);
}

// Only now that every original has been loaded and bundled: replace them.
for (const entry of readdirSync(modules)) {
  if (entry === "rlark" || entry === ".bin" || entry === "@xterm") continue; // the dashboard serves xterm's files
  rmSync(path.join(modules, entry), { recursive: true, force: true });
}
rmSync(path.join(modules, ".bin"), { recursive: true, force: true });
rmSync(path.join(modules, ".package-lock.json"), { force: true });
for (const [relative, contents] of bundles) {
  const file = path.join(modules, relative);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, contents);
}
for (const [name, exportsMap] of byPackage) {
  writeFileSync(
    path.join(modules, name, "package.json"),
    `${JSON.stringify({ name, private: true, exports: Object.fromEntries([...exportsMap].sort()) }, null, 2)}\n`,
  );
}

let total = 0;
for (const file of javascriptFiles(modules)) if (!file.startsWith(packageDir)) total += statSync(file).size;
console.log(`bundled ${uses.size} specifiers of ${byPackage.size} packages: ${(total / 1e6).toFixed(1)} MB`);
