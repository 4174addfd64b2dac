import { type AgentCredentials, type CredentialStore, enrollAgent } from "../lib/tunnel/index.ts";

export interface EnsureCredentialsOptions {
  store: CredentialStore;
  /** `host:port` of the hub's SSH endpoint. */
  hub: string;
  /** Needed only on first start; ignored once credentials are stored. */
  token?: string;
  caHash?: string;
  now?: () => number;
}

/**
 * The agent's identity: what the store holds, or, on first start, a fresh enrollment with the
 * bootstrap token (saved before use so a restart never needs the token again).
 */
export async function ensureAgentCredentials(options: EnsureCredentialsOptions): Promise<AgentCredentials> {
  const stored = await options.store.load();
  if (stored) return stored;
  if (!options.token || !options.caHash) {
    throw new Error(
      "this agent is not enrolled yet: run `rlark token create --cluster <name>` on the hub and pass --token and --ca-hash",
    );
  }
  const credentials = await enrollAgent({
    hub: options.hub,
    token: options.token,
    caHash: options.caHash,
    ...(options.now ? { now: options.now } : {}),
  });
  await options.store.save(credentials);
  return credentials;
}
