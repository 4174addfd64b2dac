import { existsSync } from "node:fs";
import path from "node:path";
import { Command } from "commander";
import packageJson from "../../package.json" with { type: "json" };
import { registerAgent } from "./agent.ts";
import { CliError, usageError } from "./cli-error.ts";
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
import { registerSeal } from "./seal.ts";
import { registerSealKey } from "./seal-key.ts";
import { registerStatus } from "./status.ts";
import { registerToken } from "./token.ts";
import { registerUp } from "./up.ts";
import { registerUser } from "./user.ts";
import { registerValidate } from "./validate.ts";

/** Builds the `rlark` command tree; each subcommand registers itself from its own file. */
export function buildProgram(): Command {
  const program = new Command("rlark")
    .description("GitOps for embodied-AI work across many Kubernetes clusters")
    .version(packageJson.version)
    .showHelpAfterError()
    .exitOverride((err) => {
      // commander exits 1 on usage errors; our contract is 2 for usage, 1 for invalid input.
      process.exit(err.exitCode === 0 ? 0 : 2);
    });
  registerUp(program);
  registerHub(program);
  registerValidate(program);
  registerPlan(program);
  registerStatus(program);
  registerCluster(program);
  registerLogs(program);
  registerAgent(program);
  registerToken(program, {
    enrollment: async ({ dataDir }) => {
      // Opening the PKI or the store creates them: never in a directory that holds no hub.
      if (!["store.db", "store.json"].some((file) => existsSync(path.join(dataDir, file))))
        throw usageError(
          `no hub data in ${dataDir}: pass the --data-dir of a hub that has started (rlark up, rlark hub)`,
        );
      const { openHubPki } = await import("../hub/index.ts");
      // RLARK_CA_DIR as `rlark hub` reads it: `kubectl exec` into the hub's pod inherits it
      const caDir = process.env.RLARK_CA_DIR || undefined;
      return openHubPki({
        dataDir,
        ...(caDir ? { caDir: path.resolve(caDir) } : {}),
        clusterExists: (name) => clusterDeclared(dataDir, name),
      }).enrollment;
    },
  });
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

/**
 * Whether the hub in `dataDir` holds the Cluster (declared in git); read while the hub runs. A hub
 * that has applied no revision yet holds nothing from git: that is not the repository's fault.
 */
async function clusterDeclared(dataDir: string, name: string): Promise<boolean> {
  const [{ openStoreOfDataDir }, { lastAppliedRevision }] = await Promise.all([
    import("../hub/index.ts"),
    import("../source/index.ts"),
  ]);
  const store = await openStoreOfDataDir(dataDir);
  try {
    if ((await store.get("Cluster", undefined, name)) !== undefined) return true;
  } finally {
    await store.close();
  }
  if ((await lastAppliedRevision(dataDir)) === null)
    throw new CliError("the hub has not finished loading the repository; try again");
  return false;
}
