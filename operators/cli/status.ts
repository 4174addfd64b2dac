import { type Command, Option } from "commander";
import { escapeControl, escapeStrings, terminalJson } from "../lib/terminal-text.ts";
import { capabilityGate, parseRequired, renderGate } from "./capability-gate.ts";
import { usageError } from "./cli-error.ts";
import { errorMessage, resolveToken } from "./hub-token.ts";

export const STATUS_HELP = `
Prints what a running hub is doing: the git revision it has applied (or why it refused the
latest one), each Job with its phase and tasks, where each Task was placed, the clusters, and
the images pre-pulled onto nodes for their Tasks (Present, Pulling, or Failed with the runtime's
message; docs/adr/0012-image-pre-pull.md).
The token comes from --token, RLARK_TOKEN, or <data-dir>/admin-token.

--require shell,files,logs is a release gate: the command exits 1 unless every online agent
reports each named capability READY, and names each agent and capability that is not (one not
reported at all is UNKNOWN). \`runtime\` stands for the runtime of any kind. See docs/diagnosis.md.

Examples:
  rlark status
  rlark status --require shell,files,logs,runtime
  rlark status --hub https://rlark.example.com --token-file ~/.rlark-token --output json
`;

interface StatusFlags {
  hub: string;
  dataDir: string;
  token?: string;
  tokenFile?: string;
  output: "text" | "json";
  require?: string[];
}

type Obj = {
  metadata: { name: string; namespace?: string; creationTimestamp?: string };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};

export function registerStatus(program: Command): void {
  program
    .command("status")
    .description("show the source revision, jobs, tasks and clusters of a running hub")
    .option("--hub <url>", "the hub's HTTP address", "http://127.0.0.1:8080")
    .option("--data-dir <dir>", "where to find admin-token when no token is given", ".rlark")
    .option("--token <token>", "bearer token (or RLARK_TOKEN)")
    .option("--token-file <file>", "file holding the bearer token")
    .addOption(new Option("-o, --output <format>", "output format").choices(["text", "json"]).default("text"))
    .option(
      "--require <capabilities>",
      "exit 1 unless every online agent reports these (comma-separated) READY",
      parseRequired,
    )
    .addHelpText("after", STATUS_HELP)
    .action(async (flags: StatusFlags) => {
      const token = await resolveToken(flags);
      const get = async (route: string) => {
        const url = new URL(route, flags.hub);
        const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } }).catch(
          (error: unknown) => {
            const cause = (error as { cause?: unknown }).cause;
            throw usageError(
              `cannot reach ${new URL(flags.hub).href}: ${cause instanceof Error ? cause.message : String(error)}`,
            );
          },
        );
        if (!response.ok)
          throw usageError(
            `GET ${url.pathname}: HTTP ${response.status} ${escapeControl(await errorMessage(response))}`,
          );
        return response.json() as Promise<unknown>;
      };
      const [source, jobs, tasks, clusters, nodes] = await Promise.all([
        get("/api/v1/source"),
        get("/api/v1/rlinf.io/v1alpha1/jobs"),
        get("/api/v1/rlinf.io/v1alpha1/tasks"),
        get("/api/v1/rlinf.io/v1alpha1/clusters"),
        get("/api/v1/rlinf.io/v1alpha1/nodes"),
      ]);
      const report = {
        source,
        jobs: (jobs as { items: Obj[] }).items,
        tasks: (tasks as { items: Obj[] }).items,
        clusters: (clusters as { items: Obj[] }).items,
        images: nodeImages((nodes as { items: Obj[] }).items),
      };
      const gate = flags.require ? capabilityGate(report.clusters, flags.require) : undefined;
      process.stdout.write(
        flags.output === "json"
          ? `${terminalJson(gate ? { ...report, gate } : report, 2)}\n`
          : renderText(escapeStrings(report)) + (gate ? `\n${renderGate(escapeStrings(gate))}` : ""),
      );
      if (gate && !gate.passed) process.exitCode = 1;
    });
}

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

type ImagePull = {
  image: string;
  phase: string;
  message?: string;
  attempts?: number;
  lastTransitionTime?: string;
};
type NodeImages = { cluster: string; node: string; images: ImagePull[] };

/** The nodes with image pre-pull results, by cluster and node (the Node's namespace is agent-<cluster>). */
function nodeImages(nodes: Obj[]): NodeImages[] {
  return nodes
    .filter((n) => Array.isArray(n.status?.images) && n.status.images.length > 0)
    .map((n) => ({
      cluster: (n.metadata.namespace ?? "").replace(/^agent-/, ""),
      node: n.metadata.name,
      images: n.status?.images as ImagePull[],
    }));
}

function renderText(report: {
  source: unknown;
  jobs: Obj[];
  tasks: Obj[];
  clusters: Obj[];
  images: NodeImages[];
}): string {
  const source = report.source as Record<string, unknown>;
  const lines: string[] = [];
  const revision =
    typeof source.lastAppliedRevision === "string" ? source.lastAppliedRevision.slice(0, 12) : "none";
  lines.push(
    `Source: ${source.url ?? "-"} (${source.branch ?? "-"}) ${source.state ?? ""}, applied ${revision}`,
  );
  if (typeof source.fetchError === "string") lines.push(`  fetch error: ${source.fetchError}`);
  const errors = Array.isArray(source.errors) ? (source.errors as Record<string, unknown>[]) : [];
  if (errors.length > 0) {
    lines.push(
      `  revision ${String(source.lastAttemptedRevision ?? "").slice(0, 12)} refused, ${errors.length} error(s):`,
    );
    for (const e of errors.slice(0, 10))
      lines.push(`    ${e.file}:${e.line}:${e.column} ${e.path}: ${e.message}`);
  }
  lines.push("", "Jobs:");
  lines.push(
    table([
      ["NAME", "PHASE", "RUN", "TASKS", "TEAM", "MESSAGE"],
      ...report.jobs.map((j) => [
        j.metadata.name,
        String(j.status?.phase ?? "-"),
        String(j.status?.run ?? "-"),
        String(Array.isArray(j.spec?.tasks) ? j.spec.tasks.length : 0),
        typeof j.spec?.team === "string" ? j.spec.team : "-",
        jobMessage(j),
      ]),
    ]),
  );
  lines.push("", "Tasks:");
  lines.push(
    table([
      ["NAMESPACE", "NAME", "PHASE", "NODES"],
      ...report.tasks.map((t) => [
        t.metadata.namespace ?? "",
        t.metadata.name,
        String(t.status?.phase ?? "-"),
        Array.isArray(t.status?.observedNodes) ? t.status.observedNodes.join(",") : "",
      ]),
    ]),
  );
  lines.push("", "Clusters:");
  lines.push(
    table([
      ["NAME", "RUNTIME", "PHASE", "GROUP", "CAPABILITIES"],
      ...report.clusters.map((c) => [
        c.metadata.name,
        String(c.spec?.runtime ?? "-"),
        // A cluster whose agent never connected has no status yet: Offline, as the dashboard says.
        String(c.status?.phase ?? "Offline"),
        groupSummary(c),
        capabilitySummary(c),
      ]),
    ]),
  );
  if (report.images.length > 0) {
    lines.push("", "Images pre-pulled onto nodes:");
    lines.push(
      table([
        ["CLUSTER", "NODE", "IMAGE", "PHASE", "SINCE", "MESSAGE"],
        ...report.images.flatMap((n) =>
          n.images.map((i) => [
            n.cluster,
            n.node,
            i.image,
            i.attempts ? `${i.phase} (${i.attempts}x)` : i.phase,
            i.lastTransitionTime ?? "-",
            i.message ?? "",
          ]),
        ),
      ]),
    );
  }
  return `${lines.join("\n")}\n`;
}

type Capability = { name: string; health?: string };

/** The AgentGroup's members by state, as the agent's member sees them (docs/diagnosis.md). */
function groupSummary(cluster: Obj): string {
  const group = cluster.status?.agentGroup as Record<string, number> | undefined;
  if (!group) return "-";
  const states = ["alive", "suspect", "dead", "left"].filter((s) => s === "alive" || (group[s] ?? 0) > 0);
  return states.map((s) => `${group[s] ?? 0} ${s}`).join(", ");
}

/** Each capability that is not READY by name, after a count of the READY ones; none reported: UNKNOWN. */
function capabilitySummary(cluster: Obj): string {
  const caps = (
    Array.isArray(cluster.status?.capabilities) ? cluster.status.capabilities : []
  ) as Capability[];
  if (caps.length === 0) return cluster.status?.phase === "Online" ? "UNKNOWN (none reported)" : "-";
  const ready = caps.filter((c) => c.health === "READY").length;
  const others = caps.filter((c) => c.health !== "READY").map((c) => `${c.name} ${c.health ?? "UNKNOWN"}`);
  return [`${ready}/${caps.length} READY`, ...others].join(", ");
}

type Condition = { type?: string; status?: string; message?: string };

/**
 * Why a Job is where it is: the quota it waits for or what keeps a Pending one from being
 * placed, why a Stopping one is preempted, what failed a Failed one.
 */
function jobMessage(job: Obj): string {
  const conditions = (Array.isArray(job.status?.conditions) ? job.status.conditions : []) as Condition[];
  const holding = (type: string, status: string) =>
    conditions.find((c) => c.type === type && c.status === status && c.message)?.message;
  const phase = job.status?.phase ?? "Pending";
  const message =
    phase === "Pending"
      ? (holding("QuotaReserved", "False") ??
        holding("Scheduled", "False") ??
        conditions.find((c) => c.status === "False" && c.message)?.message)
      : phase === "Failed"
        ? holding("Failed", "True")
        : phase === "Stopping"
          ? holding("Evicted", "True")
          : undefined;
  return (message ?? "").replace(/\s+/g, " ");
}
