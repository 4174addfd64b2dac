// Which module registers each top-level command, so `rlark validate` loads validate's modules and
// not the agent's, the device controllers' gRPC or the tunnel's ssh2: a CI job's `rlark validate`
// starts in about half the memory. The order is `rlark --help`'s; tests/cli/command-table.test.ts
// checks that this table and program.ts name the same commands in the same order.
import type { Command } from "commander";
import { newRootCommand } from "./root-command.ts";

type Registrar = (program: Command) => void;

const REGISTRARS: [names: string[], load: () => Promise<Registrar>][] = [
  [["up"], async () => (await import("./up.ts")).registerUp],
  [["hub"], async () => (await import("./hub.ts")).registerHub],
  [["validate"], async () => (await import("./validate.ts")).registerValidate],
  [["plan"], async () => (await import("./plan.ts")).registerPlan],
  [["status"], async () => (await import("./status.ts")).registerStatus],
  [["cluster"], async () => (await import("./cluster.ts")).registerCluster],
  [["logs"], async () => (await import("./logs.ts")).registerLogs],
  [["agent"], async () => (await import("./agent.ts")).registerAgent],
  [["token"], async () => (await import("./token-of-hub.ts")).registerHubToken],
  [["user"], async () => (await import("./user.ts")).registerUser],
  [["seal"], async () => (await import("./seal.ts")).registerSeal],
  [["seal-key"], async () => (await import("./seal-key.ts")).registerSealKey],
  [["crds"], async () => (await import("./crds.ts")).registerCrds],
  [["device-plugin"], async () => (await import("./device-plugin.ts")).registerDevicePlugin],
  [["device-webhook"], async () => (await import("./device-webhook.ts")).registerDeviceWebhook],
  [["devinit"], async () => (await import("./devinit.ts")).registerDevinit],
  [
    ["camera-controller", "ros-controller", "ros2-controller", "camctr", "rosctr", "install-clis"],
    async () => (await import("./device-controllers.ts")).registerDeviceControllers,
  ],
  [["nodeserver"], async () => (await import("./network.ts")).registerNodeserver],
  [["sidecar"], async () => (await import("./network.ts")).registerSidecar],
];

/** Every top-level command name, in help order. */
export const COMMAND_NAMES: readonly string[] = REGISTRARS.flatMap(([names]) => names);

/**
 * The command tree for `argv` (the arguments after the program): only the named command's when
 * one is named (`rlark validate …`, `rlark help validate`), else the whole tree, which the top
 * level's help, version and unknown-command errors list from.
 */
export async function buildProgramFor(argv: readonly string[]): Promise<Command> {
  const named = argv[0] === "help" ? argv[1] : argv[0];
  const entry = REGISTRARS.find(([names]) => named !== undefined && names.includes(named));
  const program = newRootCommand();
  const loads = entry ? [entry[1]] : REGISTRARS.map(([, load]) => load);
  for (const register of await Promise.all(loads.map((load) => load()))) register(program);
  return program;
}
