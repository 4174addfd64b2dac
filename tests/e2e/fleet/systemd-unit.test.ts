// fleet/systemd/rlark-agent.service: systemd itself accepts every line, and the agent's command
// line uses only options `rlark agent` has.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { repoRoot } from "../../../hack/kube/paths.ts";
import { buildProgram } from "../../../operators/cli/program.ts";

const unit = join(repoRoot, "fleet/systemd/rlark-agent.service");

const noSystemd = spawnSync("systemd-analyze", ["--version"]).error
  ? "systemd-analyze is not installed"
  : false;

t.test("systemd-analyze verify finds nothing to say about the unit", { skip: noSystemd }, async (t) => {
  // verify reads the unit's own name from the file name: keep it, outside the checkout's path quirks
  const dir = mkdtempSync(join(tmpdir(), "rlark-unit-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  copyFileSync(unit, join(dir, "rlark-agent.service"));
  const run = spawnSync("systemd-analyze", ["verify", join(dir, "rlark-agent.service")], {
    encoding: "utf8",
  });
  t.equal(run.status, 0, "exit 0");
  // unknown keys and bad values are warnings on stderr with exit 0
  t.equal(run.stderr.trim(), "", "no warnings");
});

t.test("ExecStart runs rlark agent with options it has, under the process runtime", async (t) => {
  const exec = /^ExecStart=(.*)$/m.exec(readFileSync(unit, "utf8"))?.[1] ?? "";
  const words = exec.split(/\s+/);
  t.same(words.slice(0, 3), ["/usr/bin/env", "rlark", "agent"]);
  const known = new Set(
    buildProgram()
      .commands.find((c) => c.name() === "agent")
      ?.options.map((o) => o.long),
  );
  for (const flag of words.filter((w) => w.startsWith("--")))
    t.ok(known.has(flag), `${flag} is an option of rlark agent`);
  t.match(exec, /--runtime process/);
});
