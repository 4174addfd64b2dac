import { existsSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { CliError, usageError } from "./cli-error.ts";
import { registerToken } from "./token.ts";

/** `rlark token`, wired to the enrollment of the hub whose --data-dir it is given. */
export function registerHubToken(program: Command): void {
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
