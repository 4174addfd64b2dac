// Which programs the code spawns, read from the sources (no module is loaded): every call of
// child_process's spawn/spawnSync/execFile/execFileSync (and promisified aliases), and of the
// repository's own wrappers around them (a function whose first parameter becomes a spawn's
// program), with a string-literal program. Programs started through another one (`ip netns exec
// X`, `nsenter ... X`, `sh -c "X ..."`) count too. `node hack/ci/spawned-programs.ts` prints the
// list with where each is spawned; tests/hack/spawned-programs.test.ts checks each is installed
// by .ci/run, built by the project, or part of every Debian system.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";

const root = resolve(import.meta.dirname, "../..");

/** child_process's functions that take a program as their first argument. */
const CHILD_PROCESS = ["spawn", "spawnSync", "execFile", "execFileSync"];
/** Programs that run the program named in their arguments. */
const RUNNERS = new Set(["nsenter", "unshare", "timeout", "setsid", "env", "chroot", "sudo", "xargs"]);
const SHELLS = new Set(["sh", "bash"]);

export interface Spawn {
  program: string;
  /** `path:line`, relative to the repository. */
  at: string;
}

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (/\.(m?ts|m?js)$/.test(entry.name) && !entry.name.endsWith(".d.ts")) yield path;
  }
}

function unwrap(node: ts.Expression): ts.Expression {
  let e = node;
  while (ts.isAsExpression(e) || ts.isParenthesizedExpression(e) || ts.isNonNullExpression(e))
    e = e.expression;
  return e;
}

function calleeName(call: ts.CallExpression): string | undefined {
  const callee = unwrap(call.expression);
  if (ts.isIdentifier(callee)) return callee.text;
  if (ts.isPropertyAccessExpression(callee)) return callee.name.text;
  return undefined;
}

/** The name a function-like node is called by, if any. */
function functionName(fn: ts.SignatureDeclaration): string | undefined {
  if ((ts.isFunctionDeclaration(fn) || ts.isMethodDeclaration(fn)) && fn.name && ts.isIdentifier(fn.name)) {
    return fn.name.text;
  }
  const parent = fn.parent;
  if (
    parent &&
    (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) &&
    ts.isIdentifier(parent.name)
  ) {
    return parent.name.text;
  }
  return undefined;
}

/** Whether `arg` is the function's first parameter (or `rest[0]` of a rest parameter). */
function isFirstParameter(arg: ts.Expression, fn: ts.SignatureDeclaration): boolean {
  const first = fn.parameters[0];
  if (!first || !ts.isIdentifier(first.name)) return false;
  const e = unwrap(arg);
  if (ts.isIdentifier(e)) return e.text === first.name.text;
  return (
    first.dotDotDotToken !== undefined &&
    ts.isElementAccessExpression(e) &&
    ts.isIdentifier(e.expression) &&
    e.expression.text === first.name.text &&
    ts.isNumericLiteral(e.argumentExpression) &&
    e.argumentExpression.text === "0"
  );
}

function enclosingFunction(node: ts.Node): ts.SignatureDeclaration | undefined {
  for (let n = node.parent; n; n = n.parent) {
    if (ts.isFunctionLike(n)) return n;
  }
  return undefined;
}

function forEachCall(file: ts.SourceFile, visit: (call: ts.CallExpression) => void): void {
  const walk = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) visit(node);
    ts.forEachChild(node, walk);
  };
  walk(file);
}

/** File-level `const NAME = "literal"` declarations, so `spawn(SERVER, ...)` resolves. */
function constants(file: ts.SourceFile): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (node: ts.Node): void => {
    if (
      ts.isVariableDeclaration(node) &&
      ts.isIdentifier(node.name) &&
      node.initializer &&
      ts.isStringLiteralLike(unwrap(node.initializer)) &&
      node.parent.flags & ts.NodeFlags.Const
    ) {
      found.set(node.name.text, (unwrap(node.initializer) as ts.StringLiteralLike).text);
    }
    ts.forEachChild(node, walk);
  };
  walk(file);
  return found;
}

/** The programs a command line runs: itself and, through runners and shells, the one it starts. */
function programsOf(program: string, args: (string | undefined)[]): string[] {
  const base = program.split("/").pop() ?? program;
  const found = [program];
  if (base === "ip" && args[0] === "netns" && args[1] === "exec") {
    const inner = args[3];
    if (inner) found.push(...programsOf(inner, args.slice(4)));
  } else if (RUNNERS.has(base)) {
    // the first literal that is neither an option nor an option's value
    const index = args.findIndex(
      (a, i) =>
        a !== undefined &&
        !a.startsWith("-") &&
        !/^\d+$/.test(a) &&
        i > 0 &&
        args[i - 1] !== undefined &&
        (args[i - 1] as string).startsWith("-") === false,
    );
    const inner = index >= 0 ? args[index] : undefined;
    if (inner && /^[\w./-]+$/.test(inner)) found.push(...programsOf(inner, args.slice(index + 1)));
  } else if (SHELLS.has(base) && args[0] === "-c" && args[1]) {
    const word = /^\s*(?:exec\s+(?:-a\s+\S+\s+)?)?([\w./-]+)/.exec(args[1])?.[1];
    if (word && !/^(exec|set|export|cd|echo|trap|if|for|while|\[|test|true|false|read|kill)$/.test(word)) {
      found.push(word);
    }
  }
  return found;
}

function literalArgs(node: ts.Expression | undefined, consts: Map<string, string>): (string | undefined)[] {
  const e = node && unwrap(node);
  if (!e || !ts.isArrayLiteralExpression(e)) return [];
  return e.elements.map((el) => literal(el, consts));
}

function literal(node: ts.Expression | undefined, consts: Map<string, string>): string | undefined {
  if (!node) return undefined;
  const e = unwrap(node);
  if (ts.isStringLiteralLike(e)) return e.text;
  if (ts.isIdentifier(e)) return consts.get(e.text);
  return undefined;
}

/** Every spawned program with a literal name in the sources under `dirs` (by default the
 * repository's tests/, hack/, operators/ and bin/); `at` is relative to `base`. */
export function spawnedPrograms(
  dirs = ["tests", "hack", "operators", "bin"].map((d) => join(root, d)),
  base = root,
): Spawn[] {
  const files = dirs.flatMap((dir) => [...sourceFiles(dir)]);
  const parsed = files.map((path) =>
    ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS),
  );
  // Spawners, by file: child_process's functions where the file imports the module, their
  // promisified aliases, the file's own wrappers and the wrappers it imports; methods (`bed.spawn`)
  // by name wherever they are defined. Grown to a fixed point, since wrappers wrap wrappers.
  const local = new Map<ts.SourceFile, Set<string>>();
  const exported = new Map<string, Set<string>>();
  const methods = new Set<string>();
  for (const file of parsed) {
    const names = new Set(file.text.includes("child_process") ? CHILD_PROCESS : []);
    forEachCall(file, (call) => {
      if (calleeName(call) !== "promisify") return;
      const arg = call.arguments[0] && unwrap(call.arguments[0]);
      if (!arg || !ts.isIdentifier(arg) || !names.has(arg.text)) return;
      const parent = call.parent;
      if (ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) names.add(parent.name.text);
    });
    local.set(file, names);
    exported.set(file.fileName, new Set());
  }
  const isSpawner = (file: ts.SourceFile, call: ts.CallExpression): boolean => {
    const name = calleeName(call);
    if (!name) return false;
    if (ts.isPropertyAccessExpression(unwrap(call.expression))) return methods.has(name);
    return local.get(file)?.has(name) ?? false;
  };
  for (let grew = true; grew; ) {
    grew = false;
    for (const file of parsed) {
      const names = local.get(file) as Set<string>;
      forEachCall(file, (call) => {
        const first = call.arguments[0];
        if (!first || !isSpawner(file, call)) return;
        const fn = enclosingFunction(call);
        const wrapper = fn && isFirstParameter(first, fn) ? functionName(fn) : undefined;
        if (!fn || !wrapper) return;
        const method = ts.isMethodDeclaration(fn) || ts.isPropertyAssignment(fn.parent);
        const set = method ? methods : names;
        if (!set.has(wrapper)) {
          set.add(wrapper);
          exported.get(file.fileName)?.add(wrapper);
          grew = true;
        }
      });
      for (const statement of file.statements) {
        if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
        const from = resolve(file.fileName, "..", statement.moduleSpecifier.text);
        const theirs = exported.get(from);
        const bindings = statement.importClause?.namedBindings;
        if (!theirs || !bindings || !ts.isNamedImports(bindings)) continue;
        for (const element of bindings.elements) {
          const name = (element.propertyName ?? element.name).text;
          if (theirs.has(name) && !names.has(element.name.text)) {
            names.add(element.name.text);
            grew = true;
          }
        }
      }
    }
  }
  const found: Spawn[] = [];
  for (const file of parsed) {
    const consts = constants(file);
    forEachCall(file, (call) => {
      if (!isSpawner(file, call)) return;
      const args = call.arguments;
      // `sh("ip", "netns", ...)`: a wrapper taking the command line as separate arguments
      const rest = args.slice(1).map((a) => literal(a, consts));
      const program = literal(args[0], consts);
      if (program === undefined) return;
      const line = file.getLineAndCharacterOfPosition(call.getStart()).line + 1;
      const at = `${relative(base, file.fileName)}:${line}`;
      const argv =
        args[1] && ts.isArrayLiteralExpression(unwrap(args[1])) ? literalArgs(args[1], consts) : rest;
      for (const p of programsOf(program, argv)) found.push({ program: p, at });
    });
  }
  return found;
}

if (import.meta.main) {
  const byProgram = new Map<string, string[]>();
  for (const { program, at } of spawnedPrograms())
    byProgram.set(program, [...(byProgram.get(program) ?? []), at]);
  for (const [program, at] of [...byProgram].sort(([a], [b]) => a.localeCompare(b))) {
    console.log(`${program}\t${at.length}\t${at[0]}`);
  }
}
