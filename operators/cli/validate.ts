import { type Command, Option } from "commander";
import type { ReportFormat } from "../api/index.ts";
import { requireExistingPaths } from "./existing-paths.ts";

export const VALIDATE_HELP = `
Loads every .yaml/.yml file under the paths (default: the current directory), validates each
rlinf.io/v1alpha1 document against its kind's JSON Schema, then checks the rules that span
objects: unique names, Job domains, head and Ray tasks, Workflow DAGs, Domain CIDR overlaps,
Addon catalog entries and values, Task name lengths, label and quantity syntax, Node overlays'
clusters. Documents of other apiVersions are skipped with a warning (errors with --strict).

Exit status: 0 valid, 1 invalid, 2 usage or I/O error.

Examples:
  rlark validate examples
  rlark validate --format github .          # annotations in a GitHub Actions job
  rlark validate --format junit . > rlark.xml
`;

/**
 * Every report format, for the option's choices. Written out (not imported) because the CLI
 * registers every command at start-up and the validator loads only on use; the Record's type
 * makes tsc refuse a format missing here.
 */
const FORMATS: Record<ReportFormat, true> = { text: true, json: true, github: true, junit: true };

export function registerValidate(program: Command): void {
  program
    .command("validate")
    .description("validate the manifests of a GitOps repository (for CI pipelines)")
    .argument("[paths...]", "files or directories to validate", ["."])
    .addOption(
      new Option("-f, --format <format>", "output format").choices(Object.keys(FORMATS)).default("text"),
    )
    .option("--strict", "treat documents that are not RLark objects as errors", false)
    .addHelpText("after", VALIDATE_HELP)
    .action(async (paths: string[], options: { format: ReportFormat; strict: boolean }) => {
      requireExistingPaths(paths, process.cwd());
      const [{ renderReport }, { validatePaths }] = await Promise.all([
        import("../api/index.ts"),
        import("../source/index.ts"),
      ]);
      const result = await validatePaths(paths, {
        baseDir: process.cwd(),
        strict: options.strict,
        summarize: true,
      });
      process.stdout.write(renderReport(result, options.format));
      const ioFailure = result.errors.some((e) => e.rule === "io/not-found");
      process.exitCode = ioFailure ? 2 : result.valid ? 0 : 1;
    });
}
