// `rlark <command>` loads only that command's modules (operators/cli/command-table.ts): the table
// must name every command program.ts registers, in its order, and a command run alone must not pull
// in the agent's, the devices' or the tunnel's dependencies.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { buildProgramFor, COMMAND_NAMES } from "../../operators/cli/command-table.ts";
import { buildProgram } from "../../operators/cli/program.ts";
import { rlark } from "../helpers/rlark-cli.ts";

t.test("the table names every command of the whole tree, in help order", async (t) => {
  t.same(
    COMMAND_NAMES,
    buildProgram().commands.map((c) => c.name()),
  );
});

t.test("each command, named alone, is registered with the same options as in the whole tree", async (t) => {
  const whole = buildProgram();
  for (const name of COMMAND_NAMES) {
    const alone = await buildProgramFor([name, "--help"]);
    const command = alone.commands.find((c) => c.name() === name);
    t.ok(command, `${name} is registered`);
    t.same(
      command?.options.map((o) => o.flags),
      whole.commands.find((c) => c.name() === name)?.options.map((o) => o.flags),
      `${name}: the same options`,
    );
  }
  t.equal(
    (await buildProgramFor(["help", "validate"])).commands.length,
    1,
    "help <command> loads that command",
  );
  t.equal((await buildProgramFor([])).commands.length, COMMAND_NAMES.length, "no command: the whole tree");
  t.equal((await buildProgramFor(["--help"])).commands.length, COMMAND_NAMES.length);
  t.equal(
    (await buildProgramFor(["no-such"])).commands.length,
    COMMAND_NAMES.length,
    "unknown: the whole tree",
  );
});

t.test("rlark validate loads none of the other commands' heavy dependencies", async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-command-table-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const loaded = path.join(dir, "loaded.txt");
  const hook = path.join(dir, "hook.mjs");
  await writeFile(
    hook,
    `import { registerHooks } from "node:module";
import { appendFileSync } from "node:fs";
registerHooks({ load(url, context, next) { appendFileSync(${JSON.stringify(loaded)}, url + "\\n"); return next(url, context); } });
`,
  );
  const run = await rlark(["validate", dir], { env: { NODE_OPTIONS: `--import ${hook}` } });
  t.equal(run.code, 0, run.stderr);
  const urls = (await readFile(loaded, "utf8")).split("\n");
  t.ok(
    urls.some((u) => u.includes("/operators/api/")),
    "the hook saw the validator load (so an empty list below means something)",
  );
  for (const heavy of [
    "/node_modules/ssh2/",
    "/node_modules/@grpc/",
    "/node_modules/node-forge/",
    "/operators/agent/",
    "/operators/device/",
  ])
    t.notOk(
      urls.find((u) => u.includes(heavy)),
      `${heavy} not loaded`,
    );
});
