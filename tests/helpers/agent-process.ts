// `rlark agent` as its own process on a hub, for the end-to-end tests that kill it and start it
// again on the same state dir (process-agent, docker-agent).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Hub } from "../../operators/hub/hub.ts";
import { onRealServers, waitFor } from "./wait-for.ts";

const cli = path.resolve(import.meta.dirname, "../../operators/cli/main.ts");

/** Once the hub has `cluster` from git: a bootstrap token for it and a fresh state dir. */
export async function agentEnrollment(
  hub: Hub,
  cluster: string,
): Promise<{ token: string; stateDir: string }> {
  await waitFor(
    `the cluster ${cluster} from git`,
    async () => (await hub.store.get("Cluster", undefined, cluster)) !== undefined,
    onRealServers,
  );
  const { token } = await hub.pki.enrollment.createToken({ cluster, ttlMs: 60_000 });
  const stateDir = await mkdtemp(path.join(tmpdir(), `rlark-e2e-agent-${cluster}-`));
  return { token, stateDir };
}

/**
 * The agent on `stateDir` with `args` after the hub and state dir; `token` enrolls it, a restart
 * on an enrolled state dir passes none.
 */
export function startAgentProcess(hub: Hub, stateDir: string, args: string[], token?: string): ChildProcess {
  const all = [cli, "agent", "--hub", hub.sshAddress, "--state-dir", stateDir, ...args];
  if (token) all.push("--token", token, "--ca-hash", hub.caFingerprint);
  const child = spawn(process.execPath, all, { stdio: ["ignore", "ignore", "pipe"] });
  child.stderr?.resume();
  return child;
}
