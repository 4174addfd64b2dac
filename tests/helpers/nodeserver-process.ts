// `rlark nodeserver` as a process of its own, the way the agents run it: reading its cluster's
// peers Secret through a kubeconfig (the kubernetes runtime's DaemonSet), or reading the peers file
// an agent writes into its socket dir (the process runtime, and the group tests). Optionally in a
// network namespace (the node's), serving /stats on TCP. SIGTERM, and its exit awaited, at teardown.
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import type { Test } from "tap";
import { stopChild } from "./stop-child.ts";

const cli = path.resolve(import.meta.dirname, "../../operators/cli/main.ts");

export interface NodeserverProcessOptions {
  socketDir: string;
  /** `--stats-listen` address. */
  statsListen?: string;
  /** Network namespace to run it in (`ip netns exec`). */
  netns?: string;
  /** More flags (`--node`, `--group-listen`). */
  args?: string[];
  /** Gets its log (stderr) as it comes; otherwise it is dropped. */
  onStderr?: (text: string) => void;
}

export interface SecretNodeserverOptions extends NodeserverProcessOptions {
  /** Namespace of the `rlark-domain-peers` Secret. */
  namespace: string;
  kubeconfig: string;
}

export function startSecretNodeserver(t: Test, options: SecretNodeserverOptions): ChildProcess {
  return startNodeserver(t, options, [
    "--peers-secret",
    `${options.namespace}/rlark-domain-peers`,
    "--kubeconfig",
    options.kubeconfig,
  ]);
}

/** A nodeserver fed by the peers file in its socket dir (write it first with `writePeersFile`). */
export function startFileNodeserver(t: Test, options: NodeserverProcessOptions): ChildProcess {
  return startNodeserver(t, options, []);
}

function startNodeserver(t: Test, options: NodeserverProcessOptions, peers: string[]): ChildProcess {
  const args = [
    cli,
    "nodeserver",
    "--socket-dir",
    options.socketDir,
    ...peers,
    ...(options.statsListen ? ["--stats-listen", options.statsListen] : []),
    ...(options.args ?? []),
  ];
  const [cmd, argv] = options.netns
    ? ["ip", ["netns", "exec", options.netns, process.execPath, ...args]]
    : [process.execPath, args];
  // Not the test's environment: tap's NODE_OPTIONS would make it write into .tap/.
  const child = spawn(cmd, argv, {
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    stdio: ["ignore", "ignore", "pipe"],
  });
  if (options.onStderr) child.stderr?.on("data", (chunk: Buffer) => options.onStderr?.(chunk.toString()));
  else child.stderr?.resume();
  t.teardown(() => stopChild(child, { label: "rlark nodeserver" }));
  return child;
}
