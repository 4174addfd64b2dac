import { readFile } from "node:fs/promises";
import path from "node:path";
import { type Command, Option } from "commander";
import { CliError, usageError } from "./cli-error.ts";
import { requireExistingPaths } from "./existing-paths.ts";

export const PLAN_FORMATS = ["text", "markdown", "json"] as const;
export type PlanFormat = (typeof PLAN_FORMATS)[number];

export const PLAN_HELP = `
Validates the manifests under the paths (default: the current directory) and prints what
applying them would do: objects created, changed (a YAML diff) and deleted; where each new or
changed Job would be placed; Domain address-pool impact; Addon installs and upgrades per
cluster. The same plan a pull request gets as a comment.

What it is compared with:
  --hub URL    the live state of a running hub (read-only API; token from --token,
               --token-file or RLARK_TOKEN). Placement uses the hub's Node reports.
  --base REF   the same paths at REF of the git repository around them (e.g. origin/main).
  neither      an empty state: everything is created.

Nothing is applied and nothing in the repository runs. Server-side dry-runs need the hub's
agent tunnels and run in pull-request reviews; here the plan says they did not run.

Exit status: 0 the plan is clean, 1 validation or a dry-run failed, 2 usage or I/O error.

Examples:
  rlark plan
  rlark plan --base origin/main --format markdown > plan.md
  rlark plan --hub https://rlark.example.com --token-file ~/.rlark-token jobs/
`;

interface PlanFlags {
  hub?: string;
  token?: string;
  tokenFile?: string;
  base?: string;
  format: PlanFormat;
}

async function hubToken(flags: PlanFlags): Promise<string | undefined> {
  if (flags.token) return flags.token;
  if (flags.tokenFile) return (await readFile(flags.tokenFile, "utf8")).trim();
  return process.env.RLARK_TOKEN?.trim() || undefined;
}

export function registerPlan(program: Command): void {
  program
    .command("plan")
    .description("show what applying the manifests would change (for terminals and CI jobs)")
    .argument("[paths...]", "files or directories of manifests", ["."])
    .option("--hub <url>", "compare with the live state of this hub")
    .option("--token <token>", "bearer token for --hub (or RLARK_TOKEN)")
    .option("--token-file <file>", "file holding the bearer token for --hub")
    .option("--base <ref>", "compare with the same paths at this git ref")
    .addOption(new Option("-f, --format <format>", "output format").choices(PLAN_FORMATS).default("text"))
    .addHelpText("after", PLAN_HELP)
    .action(async (paths: string[], flags: PlanFlags, command: Command) => {
      const { plan } = await import("../feedback/index.ts");
      if (flags.hub && flags.base)
        command.error("error: --hub and --base are alternatives; pass one", { exitCode: 2 });
      const cwd = process.cwd();
      requireExistingPaths(paths, cwd);
      let live: Awaited<ReturnType<typeof plan.liveFromHub>> = [];
      let against = "an empty state";
      let base: Awaited<ReturnType<typeof plan.checkoutRevision>> | undefined;
      try {
        if (flags.hub) {
          const token = await hubToken(flags);
          if (!token) throw usageError("--hub needs a token: --token, --token-file or RLARK_TOKEN");
          live = await plan.liveFromHub({ hub: flags.hub, token });
          against = `the live state of ${new URL(flags.hub).origin}`;
        } else if (flags.base) {
          const root = await plan.repositoryRoot(cwd);
          base = await plan.checkoutRevision(root, flags.base);
          const { validatePaths } = await import("../source/index.ts");
          const basePaths = paths.map((p) =>
            path.join(base?.dir ?? "", path.relative(root, path.resolve(cwd, p))),
          );
          // A path the base does not have yet is simply empty there.
          const { existsSync } = await import("node:fs");
          const result = await validatePaths(basePaths.filter(existsSync), { baseDir: base.dir });
          live = plan.liveFromManifests(result.objects);
          against = `${flags.base} (${base.revision.slice(0, 7)})${result.valid ? "" : `, itself invalid (${result.errors.length} errors)`}`;
        }
      } catch (error) {
        await base?.remove();
        if (error instanceof CliError) throw error;
        throw usageError(error instanceof Error ? error.message : String(error));
      }
      try {
        const result = await plan.planTree({ dir: cwd, paths, revision: "", live, against });
        const out =
          flags.format === "json"
            ? plan.renderPlanJson(result)
            : flags.format === "markdown"
              ? plan.renderPlanMarkdown(result)
              : plan.renderPlanText(result);
        process.stdout.write(out);
        const ioFailure = result.errors.some((e) => e.rule === "io/not-found");
        process.exitCode = ioFailure ? 2 : plan.planFailed(result) ? 1 : 0;
      } finally {
        await base?.remove();
      }
    });
}
