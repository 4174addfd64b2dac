import { Command } from "commander";
import packageJson from "../../package.json" with { type: "json" };
import { registerAgent } from "./agent.ts";
import { registerCrds } from "./crds.ts";
import { registerHub } from "./hub.ts";
import { registerPlan } from "./plan.ts";
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
  registerAgent(program);
  registerToken(program, {
    enrollment: async ({ dataDir }) => {
      const { openHubPki } = await import("../hub/tunnel-server.ts");
      return openHubPki({ dataDir, clusterExists: (name) => clusterDeclared(dataDir, name) }).enrollment;
    },
  });
  registerUser(program);
  registerCrds(program);
  return program;
}

/** Whether the hub in `dataDir` holds the Cluster (declared in git); read while the hub runs. */
async function clusterDeclared(dataDir: string, name: string): Promise<boolean> {
  const { openSqliteStore } = await import("../lib/store/index.ts");
  const store = openSqliteStore({ dataDir });
  try {
    return (await store.get("Cluster", undefined, name)) !== undefined;
  } finally {
    await store.close();
  }
}
