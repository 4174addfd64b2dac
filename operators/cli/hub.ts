import type { Command } from "commander";
import { addCommonHubFlags, type CommonHubFlags, hubOptionsFrom } from "./hub-options.ts";
import { untilSignal } from "./until-signal.ts";

export const HUB_HELP = `
Runs the hub: follows a git repository of manifests, validates each new revision whole and
applies it to its store (an invalid revision is refused and the last good one stays), runs
the Job, Workflow and Domain controllers, writes status back to the status branch, and
serves the read-only API on --http. Every /api route and /metrics need
"Authorization: Bearer <token>"; the admin token is in <data-dir>/admin-token (0600).

Examples:
  rlark hub --repo https://github.com/acme/fleet.git --branch main --path clusters/prod
  rlark hub --repo git@github.com:acme/fleet.git --git-ssh-key-file ~/.ssh/deploy_key \\
            --webhook-secret-file /etc/rlark/webhook-secret --interval 5m
`;

const HUB_DEFAULTS = { interval: "60s", ssh: "0.0.0.0:2222" };

export function registerHub(program: Command): void {
  const command = program
    .command("hub")
    .description("run the hub: git source, controllers, status feedback and the API")
    .addHelpText("after", HUB_HELP);
  addCommonHubFlags(command, HUB_DEFAULTS).action(async (flags: CommonHubFlags) => {
    if (!flags.repo) {
      command.error("error: --repo is required (use `rlark up` for a playground repository)", {
        exitCode: 2,
      });
    }
    const options = await hubOptionsFrom(flags, { intervalMs: 60_000 });
    const { startHub } = await import("../hub/index.ts");
    const hub = await startHub(options);
    await untilSignal();
    await hub.stop();
  });
}
