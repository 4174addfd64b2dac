import t from "tap";
import { rlark } from "../helpers/rlark-cli.ts";

t.test("rlark --version prints the package version", async (t) => {
  const run = await rlark(["--version"]);
  t.equal(run.code, 0);
  t.match(run.stdout, /^\d+\.\d+\.\d+\n$/);
});

t.test("an unknown subcommand is a usage error with exit 2", async (t) => {
  const run = await rlark(["no-such-command"]);
  t.equal(run.code, 2);
  t.match(run.stderr, /unknown command|too many arguments/);
});

t.test("rlark up listens for agent tunnels on loopback by default; rlark hub on every address", async (t) => {
  const sshDefault = async (command: string) => {
    const run = await rlark([command, "--help"]);
    t.equal(run.code, 0);
    return /--ssh <host:port>[\s\S]*?\(default: "([^"]+)"\)/.exec(run.stdout)?.[1];
  };
  t.equal(await sshDefault("up"), "127.0.0.1:2222", "the playground is not reachable from the network");
  t.equal(await sshDefault("hub"), "0.0.0.0:2222", "a hub serves agents on other machines");
});
