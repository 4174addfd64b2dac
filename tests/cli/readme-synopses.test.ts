// The README's synopsis of each long-running command promises flags: every one must be an
// option of that command, so a user copying the synopsis never meets "unknown option".
import { readFileSync } from "node:fs";
import t from "tap";
import { repoRoot } from "../../hack/kube/paths.ts";
import { buildProgram } from "../../operators/cli/program.ts";
import { defaultHubFlags } from "../helpers/hub-flags.ts";

const readme = readFileSync(`${repoRoot}/README.md`, "utf8");

/** The flags in the first code block after the `### rlark <command>` heading. */
function synopsisFlags(command: string): string[] {
  const section = readme.split(`\n### rlark ${command}\n`)[1];
  const block = section && /```\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error(`README.md has no synopsis under "### rlark ${command}"`);
  return [...new Set(block.match(/--[a-z][a-z-]*/g) ?? [])];
}

for (const command of ["hub", "agent", "up", "device-plugin", "device-webhook"]) {
  t.test(`every flag in README's rlark ${command} synopsis is an option of rlark ${command}`, async (t) => {
    const cmd = buildProgram().commands.find((c) => c.name() === command);
    if (!cmd) throw new Error(`rlark has no ${command} command`);
    const known = new Set(cmd.options.map((o) => o.long));
    const flags = synopsisFlags(command);
    t.ok(flags.length > 0, "the synopsis names flags");
    for (const flag of flags) t.ok(known.has(flag), `${flag} is an option of rlark ${command}`);
  });
}

t.test(
  "the hub takes its CA from --ca-dir, or RLARK_CA_DIR (a Kubernetes Secret), else the data dir",
  async (t) => {
    const { hubOptionsFrom } = await import("../../operators/cli/hub-options.ts");
    const from = (extra: object, env: NodeJS.ProcessEnv) =>
      hubOptionsFrom({ ...defaultHubFlags(), ...extra }, { intervalMs: 1 }, env);
    t.equal((await from({ caDir: "/etc/rlark/ca" }, { RLARK_CA_DIR: "/x" })).caDir, "/etc/rlark/ca");
    t.equal((await from({}, { RLARK_CA_DIR: "/etc/rlark/ca" })).caDir, "/etc/rlark/ca");
    t.equal((await from({}, {})).caDir, undefined);
  },
);

t.test("the access limits reach the hub's options; sizes take units", async (t) => {
  const { hubOptionsFrom } = await import("../../operators/cli/hub-options.ts");
  const { parseByteSize } = await import("../../operators/cli/byte-size.ts");
  const options = (extra: object) =>
    hubOptionsFrom({ ...defaultHubFlags(), ...extra }, { intervalMs: 1 }, {});
  t.same(
    (await options({})).access,
    { maxSessionsPerUser: 16, idleTimeoutMs: 30 * 60_000, bytesPerSecondPerUser: 0 },
    "by default 16 sessions, 30 minutes idle, no byte rate",
  );
  t.same(
    (await options({ accessMaxSessions: 4, accessIdleTimeout: 600_000, accessRate: parseByteSize("20MiB") }))
      .access,
    { maxSessionsPerUser: 4, idleTimeoutMs: 600_000, bytesPerSecondPerUser: 20 * 1024 ** 2 },
  );
  t.same(
    ["0", "512", "512B", "512KiB", "1.5MB", "1GB"].map(parseByteSize),
    [0, 512, 512, 524_288, 1_500_000, 1_000_000_000],
  );
  for (const bad of ["", "-1", "10 parsecs", "1e9", "5mb"]) t.throws(() => parseByteSize(bad), bad);
});

t.test("--git-timeout reaches the hub's options; unset, the source's own default (60 s) holds", async (t) => {
  const { hubOptionsFrom } = await import("../../operators/cli/hub-options.ts");
  const options = (extra: object) =>
    hubOptionsFrom({ ...defaultHubFlags(), ...extra }, { intervalMs: 1 }, {});
  const hub = buildProgram().commands.find((c) => c.name() === "hub")!;
  const parsed = hub.parseOptions(["--git-timeout", "5s"]);
  t.same(parsed.unknown, []);
  t.equal((await options({ gitTimeout: hub.opts().gitTimeout })).gitTimeoutMs, 5_000);
  t.equal((await options({})).gitTimeoutMs, undefined);
  const { DEFAULT_GIT_TIMEOUT_MS } = await import("../../operators/source/index.ts");
  t.equal(DEFAULT_GIT_TIMEOUT_MS, 60_000);
});
