import { spawnSync } from "node:child_process";
import t from "tap";

const cli = new URL("../../operators/cli/main.ts", import.meta.url).pathname;

t.test("rlark --version prints the package version", async (t) => {
  const run = spawnSync(process.execPath, [cli, "--version"], { encoding: "utf8" });
  t.equal(run.status, 0);
  t.match(run.stdout, /^\d+\.\d+\.\d+\n$/);
});

t.test("an unknown subcommand is a usage error with exit 2", async (t) => {
  const run = spawnSync(process.execPath, [cli, "no-such-command"], { encoding: "utf8" });
  t.equal(run.status, 2);
  t.match(run.stderr, /unknown command|too many arguments/);
});
