// The layering of operators/ as a test (ARCHITECTURE.md, "Layout"): imports point down the layer
// order only, the agent imports nothing but lib and api, and one component reaches another only
// through an index.ts. Reads the sources' import statements; no module is loaded.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import t from "tap";

const operators = resolve(import.meta.dirname, "../operators");

/** Lower layers first; a component may import only components of a lower layer. */
const LAYERS: Record<string, number> = {
  lib: 0,
  api: 1,
  source: 2,
  controllers: 2,
  // Runs in clusters (nodeserver, sidecar): below everything but lib and api.
  network: 2,
  feedback: 3,
  dashboard: 3,
  hub: 4,
  cli: 5,
};
/** The agent runs in clusters without the hub's code: it may import only these. */
const AGENT_MAY_IMPORT = new Set(["lib", "api"]);

interface Import {
  from: string;
  to: string;
}

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (/\.m?ts$/.test(entry.name) && !entry.name.endsWith(".d.ts")) yield path;
  }
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g;

/** Every relative import between files of operators/, as paths relative to it. */
function operatorImports(root = operators): Import[] {
  const imports: Import[] = [];
  for (const file of sourceFiles(root)) {
    for (const match of readFileSync(file, "utf8").matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2];
      if (!specifier?.startsWith(".")) continue;
      const to = relative(root, resolve(dirname(file), specifier));
      if (!to.startsWith("..")) imports.push({ from: relative(root, file), to });
    }
  }
  return imports;
}

const layerOf = (path: string): string => path.split(sep)[0] ?? "";

/**
 * The component a file belongs to: its top-level folder, except in lib/ and controllers/, whose
 * folders are components each (lib/store, controllers/job) and whose loose files are their own
 * (lib/clock.ts, controllers/labels.ts).
 */
function componentOf(path: string): string {
  const parts = path.split(sep);
  if ((parts[0] === "lib" || parts[0] === "controllers") && parts.length > 1) {
    return parts.length > 2 ? parts.slice(0, 2).join("/") : path;
  }
  return parts[0] ?? "";
}

/** Why an import breaks the layering, or undefined when it does not. */
function layeringProblem({ from, to }: Import): string | undefined {
  const [a, b] = [layerOf(from), layerOf(to)];
  if (a !== b) {
    if (a === "agent") {
      if (!AGENT_MAY_IMPORT.has(b)) return `the agent imports ${b}/ (it may import only lib/ and api/)`;
    } else if (b === "agent") {
      if (a !== "cli") return `${a}/ imports the agent (only the cli starts it)`;
    } else if ((LAYERS[b] ?? Number.POSITIVE_INFINITY) >= (LAYERS[a] ?? Number.NEGATIVE_INFINITY)) {
      return `${a}/ imports ${b}/, which is not below it (lib < api < source, controllers < feedback, dashboard < hub < cli)`;
    }
  }
  const [ca, cb] = [componentOf(from), componentOf(to)];
  const entry = to === cb || to.endsWith(`${sep}index.ts`) || to.startsWith(`api${sep}generated${sep}`);
  if (ca !== cb && !entry) return `it skips the index.ts of ${cb}`;
  return undefined;
}

t.test("operators/ imports follow the layer order and enter components through index.ts", async (t) => {
  const imports = operatorImports();
  t.ok(imports.length > 300, `the scan found the imports (${imports.length})`);
  const problems = imports.flatMap((i) => {
    const problem = layeringProblem(i);
    return problem ? [`${i.from} -> ${i.to}: ${problem}`] : [];
  });
  t.same(problems, [], "no import breaks the layering");
});

t.test("the rules catch what they are for", async (t) => {
  const cases: [Import, RegExp | undefined][] = [
    [{ from: "api/validate/index.ts", to: "source/loader.ts" }, /not below it/],
    [{ from: "dashboard/index.ts", to: "hub/http/auth.ts" }, /not below it/],
    [{ from: "feedback/plan/x.ts", to: "dashboard/index.ts" }, /not below it/],
    [{ from: "agent/agent.ts", to: "hub/index.ts" }, /the agent imports hub/],
    [{ from: "hub/hub.ts", to: "agent/index.ts" }, /imports the agent/],
    [{ from: "hub/hub.ts", to: "source/snapshot-apply.ts" }, /skips the index.ts of source/],
    [{ from: "controllers/job/a.ts", to: "controllers/placement/place.ts" }, /controllers\/placement/],
    [{ from: "cli/up.ts", to: "hub/index.ts" }, undefined],
    [{ from: "agent/agent.ts", to: "lib/tunnel/index.ts" }, undefined],
    [{ from: "source/x.ts", to: "lib/clock.ts" }, undefined],
    [{ from: "hub/x.ts", to: "api/generated/job.ts" }, undefined],
    [{ from: "source/a.ts", to: "source/b/c.ts" }, undefined],
  ];
  for (const [i, expected] of cases) {
    const problem = layeringProblem({ from: i.from.split("/").join(sep), to: i.to.split("/").join(sep) });
    if (expected) t.match(problem, expected, `${i.from} -> ${i.to}`);
    else t.equal(problem, undefined, `${i.from} -> ${i.to}`);
  }
});
