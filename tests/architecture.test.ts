// The layering of operators/ as a test (ARCHITECTURE.md, "Layout"): imports point down the layer
// order only, the agent imports nothing but lib and api, one component reaches another only
// through an index.ts (hack/'s scripts included), no file import runs in a circle, and a runtime
// does not reach up into the agent's access side. Reads the sources' import statements; no module
// is loaded.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import t from "tap";

const operators = resolve(import.meta.dirname, "../operators");
const hack = resolve(import.meta.dirname, "../hack");

/** Lower layers first; a component may import only components of a lower layer. */
const LAYERS: Record<string, number> = {
  lib: 0,
  api: 1,
  source: 2,
  controllers: 2,
  network: 2,
  // The hub's relay of Domain traffic between clusters: it reads the store's Domains and peers.
  "domain-relay": 2,
  feedback: 3,
  // What the hub sends each agent and writes back from its reports: it reads the source's
  // overlays and artifacts, so it sits above source/.
  "agent-sync": 3,
  dashboard: 3,
  access: 3,
  hub: 4,
  cli: 5,
};
/** Processes that run in clusters without the hub's code (the agent, the nodeserver and sidecar,
 * the embodied runtime's device plugin, webhook and controllers): they may import only these, and
 * only the cli starts them. */
const IN_CLUSTER = new Set(["agent", "device", "network"]);
const IN_CLUSTER_MAY_IMPORT = new Set(["lib", "api"]);

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

/** Every relative import from files under `from` into files of operators/, as paths relative to operators/. */
function operatorImports(from = operators): Import[] {
  const imports: Import[] = [];
  for (const file of sourceFiles(from)) {
    for (const match of readFileSync(file, "utf8").matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2];
      if (!specifier?.startsWith(".")) continue;
      const to = relative(operators, resolve(dirname(file), specifier));
      if (!to.startsWith("..")) imports.push({ from: relative(operators, file), to });
    }
  }
  return imports;
}

const layerOf = (path: string): string => path.split(sep)[0] ?? "";

/**
 * The component a file belongs to: its top-level folder, except in lib/, controllers/ and device/,
 * whose folders are components each (lib/store, controllers/job, device/controllers) and whose
 * loose files are their own (lib/clock.ts, controllers/labels.ts, device/socket-env.ts).
 */
const SPLIT = new Set(["lib", "controllers", "device"]);

function componentOf(path: string): string {
  const parts = path.split(sep);
  if (SPLIT.has(parts[0] ?? "") && parts.length > 1) {
    return parts.length > 2 ? parts.slice(0, 2).join("/") : path;
  }
  return parts[0] ?? "";
}

/** Why an import breaks the layering, or undefined when it does not. */
function layeringProblem({ from, to }: Import): string | undefined {
  const [a, b] = [layerOf(from), layerOf(to)];
  if (a !== b) {
    if (IN_CLUSTER.has(a)) {
      if (!IN_CLUSTER_MAY_IMPORT.has(b)) return `${a}/ imports ${b}/ (it may import only lib/ and api/)`;
    } else if (IN_CLUSTER.has(b)) {
      if (a !== "cli") return `${a}/ imports ${b}/ (only the cli starts it)`;
    } else if ((LAYERS[b] ?? Number.POSITIVE_INFINITY) >= (LAYERS[a] ?? Number.NEGATIVE_INFINITY)) {
      return `${a}/ imports ${b}/, which is not below it (lib < api < source, controllers, domain-relay < feedback, dashboard, access, agent-sync < hub < cli)`;
    }
  }
  const [ca, cb] = [componentOf(from), componentOf(to)];
  if (ca !== cb && !isEntry(to)) return `it skips the index.ts of ${cb}`;
  return undefined;
}

/** Whether a file is where its component is entered: its index.ts, a loose file, generated types. */
function isEntry(to: string): boolean {
  return to === componentOf(to) || to.endsWith(`${sep}index.ts`) || to.startsWith(`api${sep}generated${sep}`);
}

/**
 * hack/codegen generates operators/api/generated/ and so cannot load api/index.ts, which loads
 * the generated validators: it reads the modules the generation starts from, and only these.
 */
const CODEGEN_READS = ["ajv-setup.ts", "bundle.ts", "crd.ts", "kinds.ts", "source-schemas.ts"].map((f) =>
  join("api", f),
);

/** Why an import of a hack/ script (`from` relative to hack/) breaks the layering, or undefined. */
function hackProblem(from: string, to: string): string | undefined {
  if (isEntry(to)) return undefined;
  if (from.startsWith(`codegen${sep}`) && CODEGEN_READS.includes(to)) return undefined;
  return `it skips the index.ts of ${componentOf(to)}`;
}

/**
 * A runtime is what the agent's access side (SSH sessions, SFTP) drives, so it does not import
 * it. Known imports that break the rule, until they are moved; a new one fails, and so does an
 * entry here once its import is gone (delete it then).
 */
const RUNTIME_IMPORTS_ACCESS_KNOWN = ([] as [string, string][]).map(
  ([from, to]) => `${from.split("/").join(sep)} -> ${to.split("/").join(sep)}`,
);

function runtimeImportsAccess({ from, to }: Import): boolean {
  return from.startsWith(join("agent", "runtimes") + sep) && to.startsWith(join("agent", "access") + sep);
}

/** Every circle of file imports (one per strongly connected set of files), as `a -> b -> a`. */
function importCycles(imports: readonly Import[]): string[] {
  const next = new Map<string, string[]>();
  for (const { from, to } of imports) next.set(from, [...(next.get(from) ?? []), to]);
  // Tarjan's strongly connected components, iteratively (no recursion limit on deep chains).
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[] = [];
  let counter = 0;
  for (const root of [...next.keys()].sort()) {
    if (index.has(root)) continue;
    const work: [string, number][] = [[root, 0]];
    while (work.length > 0) {
      const frame = work[work.length - 1] as [string, number];
      const [node, i] = frame;
      if (i === 0) {
        index.set(node, counter);
        low.set(node, counter++);
        stack.push(node);
        onStack.add(node);
      }
      const targets = next.get(node) ?? [];
      if (i < targets.length) {
        frame[1]++;
        const target = targets[i] as string;
        if (!index.has(target)) work.push([target, 0]);
        else if (onStack.has(target)) low.set(node, Math.min(low.get(node) ?? 0, index.get(target) ?? 0));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent[0], Math.min(low.get(parent[0]) ?? 0, low.get(node) ?? 0));
      if (low.get(node) !== index.get(node)) continue;
      const members = new Set<string>();
      let member: string | undefined;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        members.add(member);
      } while (member !== node);
      const selfLoop = (next.get(node) ?? []).includes(node);
      if (members.size > 1 || selfLoop)
        cycles.push(cycleThrough([...members].sort()[0] as string, members, next));
    }
  }
  return cycles.sort();
}

/** One shortest circle from `start` back to it inside `members` (breadth first). */
function cycleThrough(start: string, members: Set<string>, next: Map<string, string[]>): string {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift() as string;
    for (const target of next.get(node) ?? []) {
      if (!members.has(target)) continue;
      if (target === start) {
        const path = [node];
        while (path[path.length - 1] !== start)
          path.push(cameFrom.get(path[path.length - 1] as string) as string);
        return [...path.reverse(), start].join(" -> ");
      }
      if (!cameFrom.has(target) && target !== start) {
        cameFrom.set(target, node);
        queue.push(target);
      }
    }
  }
  return start;
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

t.test("no file of operators/ imports itself back through other files", async (t) => {
  t.same(importCycles(operatorImports()), [], "no import cycle");
});

t.test("a runtime does not import the agent's access side (known exceptions listed)", async (t) => {
  const found = operatorImports()
    .filter(runtimeImportsAccess)
    .map((i) => `${i.from} -> ${i.to}`);
  t.same(
    found.filter((i) => !RUNTIME_IMPORTS_ACCESS_KNOWN.includes(i)),
    [],
    "no runtime imports agent/access/ beyond the known exceptions",
  );
  t.same(
    RUNTIME_IMPORTS_ACCESS_KNOWN.filter((i) => !found.includes(i)),
    [],
    "every known exception still occurs (delete the ones that are gone)",
  );
});

t.test("hack/'s scripts enter operators/ components through index.ts", async (t) => {
  const imports = operatorImports(hack);
  t.ok(imports.length > 30, `the scan found hack/'s imports (${imports.length})`);
  const problems = imports.flatMap(({ from, to }) => {
    const script = relative(hack, resolve(operators, from));
    const problem = hackProblem(script, to);
    return problem ? [`hack/${script} -> ${to}: ${problem}`] : [];
  });
  t.same(problems, [], "no hack/ import skips an index.ts");
});

t.test("the rules catch what they are for", async (t) => {
  const cases: [Import, RegExp | undefined][] = [
    [{ from: "api/validate/index.ts", to: "source/loader.ts" }, /not below it/],
    [{ from: "dashboard/index.ts", to: "hub/http/auth.ts" }, /not below it/],
    [{ from: "feedback/plan/x.ts", to: "dashboard/index.ts" }, /not below it/],
    [{ from: "agent/agent.ts", to: "hub/index.ts" }, /agent\/ imports hub/],
    [{ from: "hub/hub.ts", to: "agent/index.ts" }, /imports agent\/ \(only the cli/],
    [{ from: "device/plugin/x.ts", to: "source/index.ts" }, /device\/ imports source/],
    [{ from: "device/plugin/x.ts", to: "agent/index.ts" }, /device\/ imports agent/],
    [{ from: "hub/hub.ts", to: "device/index.ts" }, /imports device\/ \(only the cli/],
    [{ from: "cli/device-plugin.ts", to: "device/index.ts" }, undefined],
    [{ from: "hub/hub.ts", to: "agent/index.ts" }, /only the cli starts it/],
    [{ from: "device/controllers/grpc.ts", to: "source/index.ts" }, /device\/ imports source/],
    [{ from: "device/cli/rosctr.ts", to: "cli/cli-error.ts" }, /device\/ imports cli/],
    [{ from: "hub/hub.ts", to: "device/controllers/index.ts" }, /only the cli starts it/],
    [
      { from: "cli/x.ts", to: "device/controllers/camera/camera.ts" },
      /skips the index.ts of device\/controllers/,
    ],
    [{ from: "cli/x.ts", to: "device/controllers/index.ts" }, undefined],
    [{ from: "device/cli/camctr.ts", to: "device/socket-env.ts" }, undefined],
    [{ from: "hub/hub.ts", to: "source/snapshot-apply.ts" }, /skips the index.ts of source/],
    [{ from: "controllers/job/a.ts", to: "controllers/placement/place.ts" }, /controllers\/placement/],
    [{ from: "cli/up.ts", to: "hub/index.ts" }, undefined],
    [{ from: "agent/agent.ts", to: "lib/tunnel/index.ts" }, undefined],
    [{ from: "source/x.ts", to: "lib/clock.ts" }, undefined],
    [{ from: "hub/x.ts", to: "api/generated/job.ts" }, undefined],
    [{ from: "source/a.ts", to: "source/b/c.ts" }, undefined],
    [{ from: "hub/hub.ts", to: "agent-sync/index.ts" }, undefined],
    [{ from: "hub/hub.ts", to: "agent-sync/desired-set.ts" }, /skips the index.ts of agent-sync/],
    [{ from: "agent-sync/index.ts", to: "hub/index.ts" }, /not below it/],
    [{ from: "agent-sync/desired-set.ts", to: "source/index.ts" }, undefined],
    [{ from: "dashboard/x.ts", to: "agent-sync/index.ts" }, /not below it/],
    [{ from: "hub/hub.ts", to: "domain-relay/index.ts" }, undefined],
    [{ from: "domain-relay/relay.ts", to: "source/index.ts" }, /not below it/],
    [{ from: "agent-sync/index.ts", to: "domain-relay/index.ts" }, undefined],
  ];
  for (const [i, expected] of cases) {
    const problem = layeringProblem({ from: i.from.split("/").join(sep), to: i.to.split("/").join(sep) });
    if (expected) t.match(problem, expected, `${i.from} -> ${i.to}`);
    else t.equal(problem, undefined, `${i.from} -> ${i.to}`);
  }
  const native = (path: string) => path.split("/").join(sep);
  const edges = (list: [string, string][]) =>
    list.map(([from, to]) => ({ from: native(from), to: native(to) }));
  t.same(
    importCycles(
      edges([
        ["a.ts", "b.ts"],
        ["b.ts", "c.ts"],
        ["c.ts", "a.ts"],
        ["c.ts", "d.ts"],
        ["e.ts", "e.ts"],
      ]),
    ),
    [["a.ts", "b.ts", "c.ts", "a.ts"].map(native).join(" -> "), ["e.ts", "e.ts"].join(" -> ")],
    "a cycle is reported as the files it runs through",
  );
  t.same(
    importCycles(
      edges([
        ["a.ts", "b.ts"],
        ["a.ts", "c.ts"],
        ["b.ts", "c.ts"],
      ]),
    ),
    [],
    "a diamond is no cycle",
  );
  t.ok(
    runtimeImportsAccess({
      from: native("agent/runtimes/docker/x.ts"),
      to: native("agent/access/session.ts"),
    }),
  );
  t.notOk(
    runtimeImportsAccess({ from: native("agent/access/session.ts"), to: native("agent/runtimes/types.ts") }),
  );
  t.match(hackProblem(native("bench/x.ts"), native("hub/hub.ts")), /skips the index.ts of hub/);
  t.match(hackProblem(native("bench/x.ts"), native("api/kinds.ts")), /skips the index.ts of api/);
  t.equal(hackProblem(native("codegen/outputs.ts"), native("api/kinds.ts")), undefined);
  t.equal(hackProblem(native("bench/x.ts"), native("lib/logger.ts")), undefined);
  t.equal(hackProblem(native("bench/x.ts"), native("agent/index.ts")), undefined);
});
