// `rlark cluster test NAME`: the connectivity test of an agentless Cluster now, through the hub's
// admin route POST /api/v1/clusters/:cluster/test (docs/clusters.md), instead of waiting up to
// 60 s for the periodic one. Exit 0 when the cluster's API answered, 1 when it did not, 2 for
// usage and I/O errors (the hub unreachable, a token it refuses, a Cluster that is not agentless).
import { type Command, Option } from "commander";
import { escapeControl, escapeStrings, terminalJson } from "../lib/terminal-text.ts";
import { callHub, resolveToken, type TokenFlags } from "./hub-token.ts";

export const CLUSTER_TEST_HELP = `
Runs the connectivity test of an agentless Cluster (spec.access: kubeconfig) now: the hub opens
the Cluster's sealed kubeconfig and reads the API server's Version API, records the result in
the Cluster's status (lastTestedAt, lastTestOk, lastTestMessage) as the test every 60 s does,
and, when a cluster that could not be driven answers again, drives it at once. Admins only: the
token comes from --token, RLARK_TOKEN, --token-file or <data-dir>/admin-token.

Exit status: 0 the API answered, 1 it did not (the reason is printed, never a credential),
2 usage or I/O errors (the hub unreachable, a refused token, no such agentless Cluster).

Examples:
  rlark cluster test lab
  rlark cluster test lab --hub https://rlark.example.com --token-file ~/.rlark-admin-token -o json
`;

interface TestFlags extends TokenFlags {
  hub: string;
  output: "text" | "json";
}

interface TestResult {
  cluster: string;
  ok: boolean;
  testedAt: string;
  message?: string;
  kubernetesVersion?: string;
}

export function registerCluster(program: Command): void {
  const command = program
    .command("cluster")
    .description("act on a registered cluster through the hub")
    .addHelpText("after", CLUSTER_TEST_HELP);
  command
    .command("test")
    .description("run an agentless cluster's connectivity test now")
    .argument("<name>", "the Cluster's name")
    .option("--hub <url>", "the hub's HTTP address", "http://127.0.0.1:8080")
    .option("--data-dir <dir>", "where to find admin-token when no token is given", ".rlark")
    .option("--token <token>", "bearer token (or RLARK_TOKEN)")
    .option("--token-file <file>", "file holding the bearer token")
    .addOption(new Option("-o, --output <format>", "output format").choices(["text", "json"]).default("text"))
    .addHelpText("after", CLUSTER_TEST_HELP)
    .action(async (name: string, flags: TestFlags) => {
      const token = await resolveToken(flags);
      const url = new URL(`/api/v1/clusters/${encodeURIComponent(name)}/test`, flags.hub);
      const response = await callHub("POST", url, token);
      const result = (await response.json()) as TestResult;
      if (flags.output === "json") process.stdout.write(`${terminalJson(escapeStrings(result))}\n`);
      else process.stdout.write(`${describe(result)}\n`);
      if (!result.ok) process.exitCode = 1;
    });
}

function describe(result: TestResult): string {
  const cluster = escapeControl(result.cluster);
  const at = escapeControl(result.testedAt);
  if (result.ok)
    return `${cluster}: the API answered at ${at}${result.kubernetesVersion ? ` (Kubernetes ${escapeControl(result.kubernetesVersion)})` : ""}`;
  return `${cluster}: the API did not answer at ${at}: ${escapeControl(result.message ?? "no reason given")}`;
}
