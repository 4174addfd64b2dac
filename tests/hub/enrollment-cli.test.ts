import { Command } from "commander";
import t from "tap";
import { registerToken } from "../../operators/cli/token.ts";
import { openHubPki } from "../../operators/hub/tunnel-server.ts";
import { tempDir } from "../lib/tunnel/fixture.ts";

async function run(args: string[], dataDir: string): Promise<{ out: string; exitCode: number | undefined }> {
  let out = "";
  const program = new Command("rlark").exitOverride();
  registerToken(program, {
    enrollment: ({ dataDir: dir }) =>
      openHubPki({ dataDir: dir, clusterExists: (n) => n === "beijing" }).enrollment,
    stdout: (text) => {
      out += text;
    },
  });
  const before = process.exitCode;
  process.exitCode = undefined;
  await program.parseAsync(["node", "rlark", ...args, "--data-dir", dataDir]);
  const exitCode = process.exitCode as number | undefined;
  process.exitCode = before;
  return { out, exitCode };
}

t.test("rlark token create prints a token and the CA fingerprint that a running hub accepts", async (t) => {
  const dataDir = await tempDir();
  const { out, exitCode } = await run(["token", "create", "--cluster", "beijing", "--ttl", "30m"], dataDir);
  t.equal(exitCode, undefined);
  const token = /token:\s+(\S+)/.exec(out)?.[1];
  const caHash = /ca-hash:\s+(\S+)/.exec(out)?.[1];
  const hub = openHubPki({ dataDir, clusterExists: () => true });
  t.equal(caHash, hub.ca.fingerprint);
  t.equal(await hub.enrollment.redeem(token!), "beijing", "the hub process redeems the CLI's token");
});

t.test("rlark token create refuses an undeclared cluster and a bad ttl", async (t) => {
  const dataDir = await tempDir();
  const stderr = process.stderr.write;
  process.stderr.write = () => true;
  t.teardown(() => {
    process.stderr.write = stderr;
  });
  t.equal((await run(["token", "create", "--cluster", "atlantis"], dataDir)).exitCode, 1);
  t.equal((await run(["token", "create", "--cluster", "beijing", "--ttl", "soon"], dataDir)).exitCode, 2);
});
