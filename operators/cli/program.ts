import type { Command } from "commander";
import { registerAgent } from "./agent.ts";
import { registerCluster } from "./cluster.ts";
import { registerCrds } from "./crds.ts";
import { registerDeviceControllers } from "./device-controllers.ts";
import { registerDevicePlugin } from "./device-plugin.ts";
import { registerDeviceWebhook } from "./device-webhook.ts";
import { registerDevinit } from "./devinit.ts";
import { registerHub } from "./hub.ts";
import { registerLogs } from "./logs.ts";
import { registerNodeserver, registerSidecar } from "./network.ts";
import { registerPlan } from "./plan.ts";
import { newRootCommand } from "./root-command.ts";
import { registerSeal } from "./seal.ts";
import { registerSealKey } from "./seal-key.ts";
import { registerStatus } from "./status.ts";
import { registerHubToken } from "./token-of-hub.ts";
import { registerUp } from "./up.ts";
import { registerUser } from "./user.ts";
import { registerValidate } from "./validate.ts";

/**
 * Builds the whole `rlark` command tree; each subcommand registers itself from its own file. This
 * loads every command's modules: `rlark <command>` itself builds only its own (command-table.ts).
 */
export function buildProgram(): Command {
  const program = newRootCommand();
  registerUp(program);
  registerHub(program);
  registerValidate(program);
  registerPlan(program);
  registerStatus(program);
  registerCluster(program);
  registerLogs(program);
  registerAgent(program);
  registerHubToken(program);
  registerUser(program);
  registerSeal(program);
  registerSealKey(program);
  registerCrds(program);
  registerDevicePlugin(program);
  registerDeviceWebhook(program);
  registerDevinit(program);
  registerDeviceControllers(program);
  registerNodeserver(program);
  registerSidecar(program);
  return program;
}
