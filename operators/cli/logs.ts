// `rlark logs <pod|job/<job>[/<task>]>`: a pod's output from a running hub, as `kubectl logs`
// gives it (the hub's GET …/pods/<name>/log, streamed from the pod's agent).
import { once } from "node:events";
import type { Command } from "commander";
import { escapeControl } from "../lib/terminal-text.ts";
import { CliError, usageError } from "./cli-error.ts";
import { parseDuration } from "./duration.ts";
import { errorMessage, resolveToken } from "./hub-token.ts";

export const LOGS_HELP = `
Prints a pod's output (stdout and stderr, interleaved) from a running hub, which fetches it from
the agent of the pod's cluster. The target is a pod's name (as \`rlark status\` lists it), or
job/<job> or job/<job>/<task> for the first pod of that Job (or Task), running pods first.
-f keeps printing what the pod writes until you stop it (Ctrl-C); it carries on across the
process runtime's log rotation. Process-runtime pods keep no times in their logs: --since,
--timestamps and --previous work for kubernetes pods only.
The token comes from --token, RLARK_TOKEN, --token-file or <data-dir>/admin-token.

Examples:
  rlark logs train-main-0 --tail 50
  rlark logs job/train/actor -f
  rlark logs job/train --since 10m --timestamps --container trainer
`;

interface LogsFlags {
  hub: string;
  dataDir: string;
  token?: string;
  tokenFile?: string;
  namespace?: string;
  follow?: boolean;
  tail: number;
  since?: number;
  previous?: boolean;
  timestamps?: boolean;
  container?: string;
  limitBytes?: number;
}

type PodItem = { metadata: { name: string; namespace?: string }; status?: { phase?: string } };

function positive(name: string): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value) || Number(value) < 1)
      throw usageError(`${name} must be a positive integer, not "${value}"`);
    return Number(value);
  };
}

export function registerLogs(program: Command): void {
  program
    .command("logs <target>")
    .description("print (or follow) a pod's output: a pod name, or job/<job>[/<task>]")
    .option("--hub <url>", "the hub's HTTP address", "http://127.0.0.1:8080")
    .option("--data-dir <dir>", "where to find admin-token when no token is given", ".rlark")
    .option("--token <token>", "bearer token (or RLARK_TOKEN)")
    .option("--token-file <file>", "file holding the bearer token")
    .option(
      "-n, --namespace <namespace>",
      "the pod's namespace (agent-<cluster>) when its name is in several",
    )
    .option("-f, --follow", "keep printing new output")
    .option("--tail <lines>", "only the last N lines (at most 10000)", positive("--tail"), 100)
    .option("--since <duration>", "only output newer than this (e.g. 10m, 1h)", parseDuration)
    .option("-p, --previous", "the output of the container's previous run")
    .option("--timestamps", "prefix each line with its time")
    .option("-c, --container <name>", "the container (default: the pod's first)")
    .option("--limit-bytes <bytes>", "stop after this many bytes", positive("--limit-bytes"))
    .addHelpText("after", LOGS_HELP)
    .action(async (target: string, flags: LogsFlags) => {
      const token = await resolveToken(flags);
      const get = (route: string) => hubGet(flags.hub, route, token);
      const pod = await resolveTarget(get, target, flags.namespace);
      const query = new URLSearchParams({ namespace: pod.namespace, tailLines: String(flags.tail) });
      if (flags.follow) query.set("follow", "true");
      if (flags.since !== undefined)
        query.set("sinceSeconds", String(Math.max(1, Math.ceil(flags.since / 1000))));
      if (flags.previous) query.set("previous", "true");
      if (flags.timestamps) query.set("timestamps", "true");
      if (flags.container) query.set("container", flags.container);
      if (flags.limitBytes) query.set("limitBytes", String(flags.limitBytes));
      const response = await get(
        `/api/v1/rlinf.io/v1alpha1/pods/${encodeURIComponent(pod.name)}/log?${query}`,
      );
      if (!response.body) return;
      for await (const chunk of response.body) {
        if (!process.stdout.write(chunk)) await once(process.stdout, "drain");
      }
    });
}

async function hubGet(hub: string, route: string, token: string): Promise<Response> {
  const url = new URL(route, hub);
  const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } }).catch(
    (error: unknown) => {
      const cause = (error as { cause?: unknown }).cause;
      throw usageError(
        `cannot reach ${new URL(hub).href}: ${cause instanceof Error ? cause.message : String(error)}`,
      );
    },
  );
  if (!response.ok)
    throw new CliError(
      `GET ${url.pathname}: HTTP ${response.status} ${escapeControl(await errorMessage(response))}`,
    );
  return response;
}

/** The pod a target names; for a Job (or Task), its first pod by name, running ones first. */
async function resolveTarget(
  get: (route: string) => Promise<Response>,
  target: string,
  namespace: string | undefined,
): Promise<{ name: string; namespace: string }> {
  const [kind, job, task, ...extra] = target.split("/");
  const byJob = kind === "job";
  if ((byJob && (!job || extra.length > 0)) || (!byJob && target.includes("/") && kind !== "pod"))
    throw usageError(
      `"${target}" is not a target: give a pod name, pod/<pod>, job/<job> or job/<job>/<task>`,
    );
  const selector = byJob ? `rlinf.io/job=${job}${task ? `,rlinf.io/task=${task}` : ""}` : undefined;
  const query = new URLSearchParams(selector ? { labelSelector: selector } : {});
  if (namespace) query.set("namespace", namespace);
  const { items } = (await (await get(`/api/v1/rlinf.io/v1alpha1/pods?${query}`)).json()) as {
    items: PodItem[];
  };
  const name = byJob ? undefined : target.replace(/^pod\//, "");
  const pods = items
    .filter((p) => name === undefined || p.metadata.name === name)
    .sort(
      (a, b) =>
        Number(b.status?.phase === "Running") - Number(a.status?.phase === "Running") ||
        a.metadata.name.localeCompare(b.metadata.name),
    );
  const first = pods[0];
  if (!first?.metadata.namespace)
    throw new CliError(`no pod found for ${target}${namespace ? ` in ${namespace}` : ""}`);
  if (name !== undefined && pods.length > 1)
    throw usageError(
      `pod ${name} is in ${pods.map((p) => p.metadata.namespace).join(", ")}: pick one with --namespace`,
    );
  if (byJob && pods.length > 1)
    process.stderr.write(`${pods.length} pods for ${target}; showing ${first.metadata.name}\n`);
  return { name: first.metadata.name, namespace: first.metadata.namespace };
}
