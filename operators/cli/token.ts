import type { Command } from "commander";
import type { Enrollment } from "../hub/index.ts";
import { CliError } from "./cli-error.ts";
import { parseDuration } from "./duration.ts";

export interface TokenCommandDeps {
  /**
   * The enrollment over the hub's data dir; the composition supplies `clusterExists` from the
   * GitOps repository (e.g. `openHubPki({ dataDir, clusterExists }).enrollment`).
   */
  enrollment(options: {
    dataDir: string;
  }): Promise<Pick<Enrollment, "createToken">> | Pick<Enrollment, "createToken">;
  defaultDataDir?: string;
  stdout?: (text: string) => void;
}

export const TOKEN_HELP = `
Prints a one-time bootstrap token for an agent of the given Cluster (declared in git) and the
hub CA fingerprint the agent pins. Give both to the agent:

  rlark agent --hub hub.example.com:2222 --token <token> --ca-hash sha256:<hex>

The token works once, until it expires. Only its hash is stored.
`;

export function registerToken(program: Command, deps: TokenCommandDeps): void {
  const token = program.command("token").description("bootstrap tokens for agent enrollment");
  token
    .command("create")
    .description("create a one-time bootstrap token for a cluster's agent")
    .requiredOption("--cluster <name>", "the Cluster the agent will serve")
    .option("--ttl <duration>", "how long the token stays valid", "1h")
    .option(
      "--data-dir <dir>",
      "the hub's data directory",
      deps.defaultDataDir ?? process.env.RLARK_DATA_DIR ?? ".rlark",
    )
    .addHelpText("after", TOKEN_HELP)
    .action(async (options: { cluster: string; ttl: string; dataDir: string }) => {
      const out = deps.stdout ?? ((text: string) => process.stdout.write(text));
      let ttlMs: number;
      try {
        ttlMs = parseDuration(options.ttl);
      } catch (err) {
        process.stderr.write(`rlark token create: --ttl: ${(err as Error).message}\n`);
        process.exitCode = 2;
        return;
      }
      try {
        const enrollment = await deps.enrollment({ dataDir: options.dataDir });
        const created = await enrollment.createToken({ cluster: options.cluster, ttlMs });
        out(
          [
            `token:    ${created.token}`,
            `ca-hash:  ${created.caFingerprint}`,
            `cluster:  ${created.cluster}`,
            `expires:  ${new Date(created.expiresAt).toISOString()}`,
            "",
          ].join("\n"),
        );
      } catch (err) {
        process.stderr.write(`rlark token create: ${(err as Error).message}\n`);
        process.exitCode = err instanceof CliError ? err.exitCode : 1;
      }
    });
}
