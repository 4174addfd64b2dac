// The flags `rlark hub` hands to hubOptionsFrom when none is given: the real command's defaults,
// so a test of one flag starts from what a user gets.
import type { CommonHubFlags } from "../../operators/cli/hub-options.ts";
import { buildProgram } from "../../operators/cli/program.ts";

export function defaultHubFlags(): CommonHubFlags {
  const hub = buildProgram().commands.find((command) => command.name() === "hub");
  if (!hub) throw new Error("rlark has no hub command");
  return hub.opts() as CommonHubFlags;
}
