// What the soak reads back from the machine: the task processes alive (by the marker and the key
// each carries), the starts log, the kwok clusters' Deployments, and the counts a leak would grow
// (processes, fds, network namespaces, veths, iptables rules, temp dirs).
import { execFile } from "node:child_process";
import { readdir, readFile, readlink } from "node:fs/promises";
import { basename } from "node:path";
import { AppsV1Api } from "@kubernetes/client-node";
import { JOB_LABEL } from "../../operators/api/index.ts";
import type { FleetCluster } from "../../tests/helpers/fleet.ts";

interface Proc {
  pid: number;
  ppid: number;
  pgid: number;
  cmdline: string;
}

async function processes(): Promise<Proc[]> {
  const all: Proc[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (!stat) continue;
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (rest[0] === "Z") continue;
    all.push({ pid: Number(entry), ppid: Number(rest[1]), pgid: Number(rest[2]), cmdline });
  }
  return all;
}

/** Live task processes per start key (`job:j3:g2`): the `sh` each Raw task runs. */
export async function liveTasks(marker: string): Promise<Map<string, number[]>> {
  const byKey = new Map<string, number[]>();
  for (const p of await processes()) {
    if (!p.cmdline.startsWith("sh\0")) continue;
    const key = new RegExp(`# ${marker} ([^\\s\\0]+)`).exec(p.cmdline)?.[1];
    if (!key) continue;
    byKey.set(key, [...(byKey.get(key) ?? []), p.pid]);
  }
  return byKey;
}

/** How many times each start key appears in the starts log. */
export async function starts(startsLog: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const text = await readFile(startsLog, "utf8").catch(() => "");
  for (const line of text.split("\n")) if (line) counts.set(line, (counts.get(line) ?? 0) + 1);
  return counts;
}

/** The Deployments of `namespace` per Job label, with the GEN of their container. */
export async function kwokDeployments(
  cluster: FleetCluster,
  namespace: string,
): Promise<Map<string, string[]>> {
  const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
  const list = await apps.listNamespacedDeployment({ namespace, labelSelector: JOB_LABEL });
  const byJob = new Map<string, string[]>();
  for (const d of list.items) {
    const job = d.metadata?.labels?.[JOB_LABEL] ?? "";
    const gen = d.spec?.template.spec?.containers[0]?.env?.find((e) => e.name === "GEN")?.value ?? "?";
    byJob.set(job, [...(byJob.get(job) ?? []), gen]);
  }
  return byJob;
}

export interface Counts {
  processes: number;
  /** What each counted process runs (program and first argument), for a report of a leak. */
  programs: string[];
  fds: number;
  /** The process runtime's log writers (one per running pod, under the soak's temp folder). */
  logWriters: number;
  /** Network namespaces the soak's processes (task processes included) are in. */
  netns: number;
  iptables: number;
  tempDirs: number;
}

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve) => {
    execFile(cmd, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => resolve(error ? "" : stdout));
  });
}

/**
 * The counts a leak grows. Processes and fds: the soak's own process and every process below it
 * or in `extraPids` (the fleet's), but not task processes (their process groups hold the marker;
 * the convergence check counts those). Network namespaces: those any of these processes or the
 * task processes is in (the machine's own count moves with other people's work). iptables rules
 * are the machine's.
 */
export async function counts(marker: string, tmpRoot: string, extraPids: number[]): Promise<Counts> {
  const all = await processes();
  // Detached by the runtime (a session of their own): counted with the pods, not with the parts.
  const isLogWriter = (p: Proc) => p.cmdline.includes("log-writer-main.ts") && p.cmdline.includes(tmpRoot);
  const taskGroups = new Set(
    all.filter((p) => p.cmdline.includes(marker) && p.cmdline.startsWith("sh\0")).map((p) => p.pgid),
  );
  const children = new Map<number, Proc[]>();
  for (const p of all) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const ours: Proc[] = [];
  const queue = [process.pid, ...extraPids];
  const seen = new Set<number>();
  while (queue.length > 0) {
    const pid = queue.pop()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    const self = all.find((p) => p.pid === pid);
    if (self && !taskGroups.has(self.pgid) && !isLogWriter(self)) ours.push(self);
    for (const child of children.get(pid) ?? []) queue.push(child.pid);
  }
  let fds = 0;
  for (const p of ours) fds += (await readdir(`/proc/${p.pid}/fd`).catch(() => [])).length;
  const namespaces = new Set<string>();
  for (const p of [...ours, ...all.filter((x) => taskGroups.has(x.pgid))]) {
    const ns = await readlink(`/proc/${p.pid}/ns/net`).catch(() => undefined);
    if (ns) namespaces.add(ns);
  }
  const program = (p: Proc) => {
    const [argv0 = "", argv1 = ""] = p.cmdline.split("\0");
    return `${basename(argv0)} ${basename(argv1)}`.trim();
  };
  return {
    processes: ours.length,
    programs: ours.map(program).sort(),
    fds,
    logWriters: all.filter(isLogWriter).length,
    netns: namespaces.size,
    // rules only: the table skeleton iptables-save prints once a table exists is no leak
    iptables: (await run("iptables-save", [])).split("\n").filter((l) => l.startsWith("-A ")).length,
    tempDirs: (await readdir(tmpRoot).catch(() => [])).length,
  };
}
