import { Command } from "commander";
import packageJson from "../../package.json" with { type: "json" };

/** The `rlark` command with no subcommands yet: what every build of the tree starts from. */
export function newRootCommand(): Command {
  return new Command("rlark")
    .description("GitOps for embodied-AI work across many Kubernetes clusters")
    .version(packageJson.version)
    .showHelpAfterError()
    .exitOverride((err) => {
      // commander exits 1 on usage errors; our contract is 2 for usage, 1 for invalid input.
      process.exit(err.exitCode === 0 ? 0 : 2);
    });
}
