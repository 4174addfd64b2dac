// The process-runtime agent `rlark up` runs next to its hub: enrolled on first start with a token
// the hub mints for itself, for the Cluster `local` declared in the repository.
import { existsSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { hostname } from "node:os";
import path from "node:path";
import packageJson from "../../package.json" with { type: "json" };
import { EDGE_NODE_LABEL } from "../api/index.ts";
import { type Clock, systemClock } from "../lib/clock.ts";
import type { Logger } from "../lib/logger.ts";
import type { Store } from "../lib/store/index.ts";
import { fileCredentialStore } from "../lib/tunnel/index.ts";
import { type Agent, startAgent } from "./agent.ts";
import { ProcessRuntime } from "./runtimes/process/index.ts";

/** The first uid of the local agent's pods, as `rlark agent --pod-uid` defaults to. */
const LOCAL_POD_UID = 1338;

export interface LocalAgentOptions {
  cluster: string;
  dataDir: string;
  hub: {
    sshAddress: string;
    caFingerprint: string;
    store: Store;
    /** The hub's git source: once it has applied a revision, the Cluster is there or is not declared. */
    source?: { watcher: { status(): { lastAppliedRevision: string | null } } };
  };
  createToken(cluster: string): Promise<string>;
  logger: Logger;
  /** How long to wait for the Cluster to appear from git while no revision is applied yet. */
  waitMs?: number;
  clock?: Clock;
}

export async function startLocalAgent(options: LocalAgentOptions): Promise<Agent | undefined> {
  const clock = options.clock ?? systemClock;
  const deadline = clock.now() + (options.waitMs ?? 30_000);
  for (;;) {
    // Read before the store: a revision applied in between is then seen with its Cluster.
    const applied = options.hub.source?.watcher.status().lastAppliedRevision;
    if (await options.hub.store.get("Cluster", undefined, options.cluster)) break;
    if (applied) {
      options.logger.info(
        `revision ${applied.slice(0, 12)} declares no Cluster "${options.cluster}": no local agent started`,
      );
      return undefined;
    }
    if (clock.now() > deadline) return undefined;
    await new Promise<void>((resolve) => clock.setTimeout(resolve, 200));
  }
  const dir = agentDir(options.dataDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const credentials = fileCredentialStore(path.join(dir, "credentials.json"));
  const enrolled = (await credentials.load()) !== undefined;
  const runtime = await ProcessRuntime.open({
    stateDir: runtimeDir(options.dataDir),
    nodeName: hostname(),
    nodeLabels: { [EDGE_NODE_LABEL]: "true" },
    agentVersion: packageJson.version,
    logger: options.logger,
    // As root, a pod is not a root shell on the host: each Task gets a uid of its own.
    ...(process.getuid?.() === 0 ? { podUsers: { firstUid: LOCAL_POD_UID } } : {}),
  });
  return startAgent({
    hub: options.hub.sshAddress,
    credentials,
    ...(enrolled
      ? {}
      : { token: await options.createToken(options.cluster), caHash: options.hub.caFingerprint }),
    runtime,
    runtimeKind: "process",
    logger: options.logger,
    clock,
  });
}

const agentDir = (dataDir: string) => path.join(path.resolve(dataDir), "agent");
const runtimeDir = (dataDir: string) => path.join(agentDir(dataDir), "runtime");

/** Pods of the local agent whose processes run, e.g. left by a stopped `rlark up` for the next to adopt. */
export function localPodProcesses(dataDir: string): number {
  return ProcessRuntime.running(runtimeDir(dataDir));
}

/**
 * Stops every pod process the local agent of `dataDir` left running and removes the runtime's
 * state (pod records, logs, work dirs, artifacts); returns how many pods were stopped. The
 * processes are found by their command lines, so this works also when the data dir was removed
 * (a runtime with no records kills them as strays); then nothing is left of the data dir either.
 */
export async function cleanLocalAgent(dataDir: string, logger: Logger): Promise<number> {
  const existed = existsSync(dataDir);
  const stopped = localPodProcesses(dataDir);
  const runtime = await ProcessRuntime.open({ stateDir: runtimeDir(dataDir), logger });
  await runtime.stop({ terminatePods: true });
  await rm(runtimeDir(dataDir), { recursive: true, force: true });
  if (!existed) await rm(dataDir, { recursive: true, force: true });
  return stopped;
}
