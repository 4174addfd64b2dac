import {
  type CredentialStore,
  createTunnelClient,
  type TunnelClient,
  type TunnelClientOptions,
} from "../lib/tunnel/index.ts";
import { ensureAgentCredentials } from "./enroll.ts";

export type AgentTunnelOptions = Omit<TunnelClientOptions, "credentials" | "credentialStore"> & {
  store: CredentialStore;
  token?: string;
  caHash?: string;
};

/**
 * Enrolls if needed, then starts the tunnel to the hub. The runtimes plug in through
 * `onDesired`, `report()` and `capabilities`.
 */
export async function startAgentTunnel(options: AgentTunnelOptions): Promise<TunnelClient> {
  const { store, token, caHash, ...rest } = options;
  const credentials = await ensureAgentCredentials({
    store,
    hub: options.hub,
    ...(token ? { token } : {}),
    ...(caHash ? { caHash } : {}),
  });
  const client = createTunnelClient({ ...rest, credentials, credentialStore: store });
  client.start();
  return client;
}
