// Hubs and an agent as real `rlark` processes on a git server, for the tests that kill a hub
// (hub-kill: SIGKILL and restart on SQLite; hub-failover: kill -9 of the leader on the kubernetes
// store). Every process, and every task process the agent started (found by `marker` in its
// command line), is killed when the test ends. Each hub's log lines are kept with the time they
// came, so a test can say when a hub started to lead.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Test } from "tap";
import { freePort } from "./free-port.ts";
import { createGitServer, type GitServer } from "./git-server.ts";
import { killMarked, pidsMarked } from "./marked-processes.ts";

const cli = path.resolve(import.meta.dirname, "../../operators/cli/main.ts");

export interface HubProcess {
  name: string;
  dataDir: string;
  http: number;
  ssh: number;
  child?: ChildProcess;
  /** Log lines of the current process, with Date.now() when each came. */
  lines: { at: number; text: string }[];
}

export interface HubProcesses {
  git: GitServer;
  /** A hub's ports and data dir (nothing started). */
  hub(name: string): Promise<HubProcess>;
  /** Starts (or restarts) `hub` with the common flags and `extra`. */
  start(hub: HubProcess, extra?: string[]): ChildProcess;
  /** The JSON answer of an authenticated GET, or undefined (down, not 2xx). */
  api(hub: HubProcess, route: string): Promise<ApiObject | undefined>;
  /** The HTTP status of an authenticated GET, or undefined when the hub does not answer. */
  status(hub: HubProcess, route: string): Promise<number | undefined>;
  /**
   * `rlark token create` against `hub`'s data dir, then `rlark agent` on the hubs' SSH ports, for
   * the cluster "local" unless `options.cluster` names another, with `options.args` added.
   */
  startAgent(tokenFrom: HubProcess, hubs: HubProcess[], options?: AgentOptions): Promise<AgentProcess>;
  /** Task processes the agent runs (their command line holds the marker). */
  taskProcesses(): Promise<number>;
  /** The first time (Date.now()) `hub` logged a line holding `text` since `after`. */
  loggedAt(hub: HubProcess, text: string, after: number): number | undefined;
}

export interface AgentOptions {
  cluster?: string;
  /** Where the agent dials the hubs (`host:port`, a proxy's), instead of their SSH ports. */
  hubAddresses?: string[];
  /** More `rlark agent` flags (`--runtime kubernetes --kubeconfig ...`). */
  args?: string[];
}

export interface AgentProcess {
  child: ChildProcess;
  /** Starts the agent again on its (enrolled) state dir, as after a crash; returns the new child. */
  restart(): ChildProcess;
}

export interface ApiObject {
  status?: Record<string, unknown>;
  items?: unknown[];
}

/** A Job whose one task runs `sleep 300` as a Deployment, its command line marked. */
export function sleepingJob(name: string, marker: string): string {
  return `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: ${name}
spec:
  tasks:
    - name: main
      role: Env
      agentType: Raw
      raw:
        kind: Deployment
        command: ["sh", "-c", "sleep 300; true # ${marker}"]
`;
}

/** Where the processes' log lines go: TAP comments unless told (the chaos soak writes a file). */
export type Echo = (line: string) => void;

/** A hub keeps this many of its latest log lines (a long soak must not grow without bound). */
const KEPT_LINES = 20_000;

/** A git server with the process Cluster "local" and the Job "svc"; hubs started with `common`. */
export async function hubProcesses(
  t: Test,
  marker: string,
  common: string[],
  echo: Echo = (line) => process.stderr.write(line),
): Promise<HubProcesses> {
  const git = await createGitServer();
  t.teardown(() => git.close());
  await git.commit({
    "cluster.yaml":
      "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: local\nspec:\n  runtime: process\n",
    "job.yaml": sleepingJob("svc", marker),
  });
  const children: ChildProcess[] = [];
  t.teardown(async () => {
    for (const child of children) child.kill("SIGKILL");
    // The agent leaves Deployment-kind processes running for its successor: the test kills them
    // (each pod is a process group of its own: the group takes the sleep too).
    await killMarked(marker);
  });
  const run = (label: string, args: string[], lines?: HubProcess["lines"]) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    const keep = (chunk: Buffer) => {
      const at = Date.now();
      for (const text of chunk.toString().split("\n")) {
        if (text === "") continue;
        lines?.push({ at, text });
        if (lines && lines.length > KEPT_LINES) lines.splice(0, lines.length - KEPT_LINES);
        // TAP comments, so a failure shows what the processes said.
        echo(`[${label}] ${text}\n`);
      }
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    children.push(child);
    return child;
  };
  const get = async (hub: HubProcess, route: string) => {
    const token = (await readFile(path.join(hub.dataDir, "admin-token"), "utf8").catch(() => "")).trim();
    return fetch(`http://127.0.0.1:${hub.http}${route}`, {
      headers: { authorization: `Bearer ${token}` },
    }).catch(() => undefined);
  };
  return {
    git,
    async hub(name) {
      return {
        name,
        dataDir: await mkdtemp(path.join(tmpdir(), `${marker}-${name}-`)),
        http: await freePort(),
        ssh: await freePort(),
        lines: [],
      };
    },
    start(hub, extra = []) {
      hub.lines = [];
      hub.child = run(
        `hub ${hub.name}`,
        [
          "hub",
          ...["--repo", git.fileUrl, "--branch", git.branch, "--interval", "200ms"],
          ...["--data-dir", hub.dataDir, "--http", `127.0.0.1:${hub.http}`, "--ssh", `127.0.0.1:${hub.ssh}`],
          ...common,
          ...extra,
        ],
        hub.lines,
      );
      return hub.child;
    },
    async api(hub, route) {
      const response = await get(hub, route);
      return response?.ok ? ((await response.json()) as ApiObject) : undefined;
    },
    async status(hub, route) {
      return (await get(hub, route))?.status;
    },
    async startAgent(tokenFrom, hubs, options = {}) {
      const cluster = options.cluster ?? "local";
      // The operator's way: `rlark token create` against the running hub's data dir.
      const created = await new Promise<string>((resolve) => {
        let out = "";
        const create = spawn(process.execPath, [
          cli,
          ...["token", "create", "--cluster", cluster, "--data-dir", tokenFrom.dataDir],
        ]);
        create.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString();
        });
        create.once("close", () => resolve(out));
      });
      const token = /token:\s+(\S+)/.exec(created)?.[1];
      const fingerprint = /ca-hash:\s+(\S+)/.exec(created)?.[1];
      if (!token || !fingerprint) throw new Error(`rlark token create printed no token: ${created}`);
      const stateDir = await mkdtemp(path.join(tmpdir(), `${marker}-agent-`));
      const base = [
        "agent",
        ...["--hub", (options.hubAddresses ?? hubs.map((h) => `127.0.0.1:${h.ssh}`)).join(",")],
        ...["--state-dir", stateDir],
        ...(options.args ?? []),
      ];
      const label = cluster === "local" ? "agent" : `agent ${cluster}`;
      const agent: AgentProcess = {
        child: run(label, [...base, "--token", token, "--ca-hash", fingerprint]),
        restart() {
          agent.child = run(label, base);
          return agent.child;
        },
      };
      return agent;
    },
    async taskProcesses() {
      return (await pidsMarked(marker)).length;
    },
    loggedAt(hub, text, after) {
      return hub.lines.find((line) => line.at >= after && line.text.includes(text))?.at;
    },
  };
}
