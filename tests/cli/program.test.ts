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

t.test("rlark up listens for agent tunnels on loopback by default; rlark hub on every address", async (t) => {
  const sshDefault = (command: string) => {
    const run = spawnSync(process.execPath, [cli, command, "--help"], { encoding: "utf8" });
    t.equal(run.status, 0);
    return /--ssh <host:port>[\s\S]*?\(default: "([^"]+)"\)/.exec(run.stdout)?.[1];
  };
  t.equal(sshDefault("up"), "127.0.0.1:2222", "the playground is not reachable from the network");
  t.equal(sshDefault("hub"), "0.0.0.0:2222", "a hub serves agents on other machines");
});
