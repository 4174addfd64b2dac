import { type Command, Option } from "commander";
import type { KindInfo } from "../api/index.ts";

export const CRDS_HELP = `
Prints an apiextensions.k8s.io/v1 CustomResourceDefinition for every rlinf.io/v1alpha1 kind
(or only the kinds named), converted from schemas/*.schema.json: structural schemas, the status
subresource, printer columns, Cluster or Namespaced scope. The output is deterministic, so it
can be committed and diffed. Rules a structural schema cannot express (exactly one runtime per
task, Ray annotations, label key syntax) are enforced by the hub when objects are written.

Examples:
  rlark crds | kubectl apply --server-side -f -
  rlark crds Job Task
  rlark crds --format json > crds.json
`;

const FORMATS = ["yaml", "json"] as const;

export function registerCrds(program: Command): void {
  program
    .command("crds")
    .description("print the CustomResourceDefinitions of every RLark kind")
    .argument("[kinds...]", "kinds (Job) or plurals (jobs) to print; default: all")
    .addOption(new Option("-f, --format <format>", "output format").choices(FORMATS).default("yaml"))
    .addHelpText("after", CRDS_HELP)
    .action(async (names: string[], options: { format: (typeof FORMATS)[number] }) => {
      const { kindByPlural, kindInfo, kinds, renderCrdsJson, renderCrdsYaml } = await import(
        "../api/index.ts"
      );
      const selected: KindInfo[] = [];
      for (const name of names) {
        const info = kindInfo(name) ?? kindByPlural(name.toLowerCase());
        if (!info) {
          process.stderr.write(
            `rlark crds: unknown kind ${JSON.stringify(name)}; known: ${kinds.map((k) => k.kind).join(", ")}\n`,
          );
          process.exitCode = 2;
          return;
        }
        if (!selected.includes(info)) selected.push(info);
      }
      const only = selected.length > 0 ? selected : undefined;
      process.stdout.write(options.format === "json" ? renderCrdsJson(only) : renderCrdsYaml(only));
    });
}
