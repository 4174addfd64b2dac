// An in-process agent enrolled on a test's hub: a fresh bootstrap token, credentials of its own in
// a temp dir, stopped at teardown (before anything the test opened earlier, such as its runtime).
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Test } from "tap";
import { type Agent, type AgentOptions, startAgent } from "../../operators/agent/agent.ts";
import type { Hub } from "../../operators/hub/hub.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { fileCredentialStore } from "../../operators/lib/tunnel/index.ts";

export type AgentOnHubOptions = Pick<AgentOptions, "runtime" | "runtimeKind"> &
  Partial<Omit<AgentOptions, "hub" | "credentials" | "token" | "caHash">>;

export async function startAgentOnHub(
  t: Test,
  hub: Hub,
  cluster: string,
  options: AgentOnHubOptions,
): Promise<Agent> {
  const dir = await mkdtemp(path.join(tmpdir(), `rlark-agent-${cluster}-`));
  const { token } = await hub.pki.enrollment.createToken({ cluster, ttlMs: 60_000 });
  const agent = await startAgent({
    hub: hub.sshAddress,
    credentials: fileCredentialStore(path.join(dir, "credentials.json")),
    token,
    caHash: hub.caFingerprint,
    logger: silentLogger,
    ...options,
  });
  t.teardown(() => agent.stop());
  return agent;
}
