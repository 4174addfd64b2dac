import { type Command, Option } from "commander";
// Only the reporters: the CLI registers every command at start-up, the validator loads on use.
import { REPORT_FORMATS, type ReportFormat, renderReport } from "../api/validate/reporters.ts";
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

export function registerValidate(program: Command): void {
  program
    .command("validate")
    .description("validate the manifests of a GitOps repository (for CI pipelines)")
    .argument("[paths...]", "files or directories to validate", ["."])
    .addOption(new Option("-f, --format <format>", "output format").choices(REPORT_FORMATS).default("text"))
    .option("--strict", "treat documents that are not RLark objects as errors", false)
    .addHelpText("after", VALIDATE_HELP)
    .action(async (paths: string[], options: { format: ReportFormat; strict: boolean }) => {
      requireExistingPaths(paths, process.cwd());
      const { validatePaths } = await import("../source/index.ts");
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
