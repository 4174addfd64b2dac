import v8 from "node:v8";
import { type Command, Option } from "commander";
import type { ReportFormat } from "../api/index.ts";
import { requireExistingPaths } from "./existing-paths.ts";
import { loadHubKey } from "./hub-key.ts";
import type { TokenFlags } from "./hub-token.ts";

interface ValidateFlags extends TokenFlags {
  format: ReportFormat;
  strict: boolean;
  hubKey?: string;
}

export const VALIDATE_HELP = `
Loads every .yaml/.yml file under the paths (default: the current directory), validates each
rlinf.io/v1alpha1 document against its kind's JSON Schema, then checks the rules that span
objects: unique names, Job domains, head and Ray tasks, Workflow DAGs, Domain CIDR overlaps,
Addon catalog entries and values, Task name lengths, label and quantity syntax, Node overlays'
clusters, and that every SealedSecret value is a well-formed sealed value. With --hub-key (a PEM
file from \`rlark seal-key show\`, or the hub's URL with a token), each value must also be sealed
to one of that hub's keys. Documents of other apiVersions are skipped with a warning (errors
with --strict).

Exit status: 0 valid, 1 invalid, 2 usage or I/O error.

Examples:
  rlark validate examples
  rlark validate --format github .          # annotations in a GitHub Actions job
  rlark validate --format junit . > rlark.xml
  rlark validate --hub-key hub-seal.pem .   # SealedSecrets sealed to this hub's key
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
    .option("--hub-key <pem file|hub url>", "check SealedSecret values are sealed to this hub's key")
    .option("--data-dir <dir>", "where to find admin-token when --hub-key is a URL", ".rlark")
    .option("--token <token>", "bearer token (or RLARK_TOKEN) when --hub-key is a URL")
    .option("--token-file <file>", "file holding the bearer token")
    .addHelpText("after", VALIDATE_HELP)
    .action(async (paths: string[], options: ValidateFlags) => {
      requireExistingPaths(paths, process.cwd());
      // A validate keeps little but makes garbage fast, and V8 sizes its heap for throughput:
      // it doubles the young generation whenever enough survives a scavenge (to 64 MiB a half on
      // a large machine) and lets the old generation grow up to 4× what was live. That was half
      // the peak memory (docs/benchmarks/validate-scale.md). Both flags are read each time V8
      // sizes a space, so setting them now, in this command only, takes effect; the hub keeps
      // V8's defaults. Cost: ~3 % more CPU at 10,000 manifests, ~40 % at 100,000.
      v8.setFlagsFromString("--semi-space-growth-factor=1");
      v8.setFlagsFromString("--optimize-for-size");
      const [{ keyIdAmong, renderReport }, { validatePaths }] = await Promise.all([
        import("../api/index.ts"),
        import("../source/index.ts"),
      ]);
      const hubKey = options.hubKey ? await loadHubKey({ ...options, hubKey: options.hubKey }) : undefined;
      const result = await validatePaths(paths, {
        baseDir: process.cwd(),
        strict: options.strict,
        summarize: true,
        ...(hubKey ? { sealCheck: keyIdAmong(hubKey.keyIds) } : {}),
      });
      process.stdout.write(renderReport(result, options.format));
      const ioFailure = result.errors.some((e) => e.rule === "io/not-found");
      process.exitCode = ioFailure ? 2 : result.valid ? 0 : 1;
    });
}
