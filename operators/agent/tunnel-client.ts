import {
  type CredentialStore,
  createTunnelClient,
  type StreamHandler,
  type TunnelClient,
  type TunnelClientOptions,
  tcpStreamHandler,
} from "../lib/tunnel/index.ts";
import { ensureAgentCredentials } from "./enroll.ts";

export type AgentTunnelOptions = Omit<TunnelClientOptions, "credentials" | "credentialStore"> & {
  store: CredentialStore;
  token?: string;
  caHash?: string;
  /** Where `kube-api` streams go: the cluster's API server for the kubernetes runtime. */
  kubeApiTarget?: { host: string; port: number };
};

/**
 * Enrolls if needed, then starts the tunnel to the hub. The runtimes plug in through
 * `onDesired`, `report()` and `capabilities`.
 */
export async function startAgentTunnel(options: AgentTunnelOptions): Promise<TunnelClient> {
  const { store, token, caHash, kubeApiTarget, ...rest } = options;
  const credentials = await ensureAgentCredentials({
    store,
    hub: options.hub,
    ...(token ? { token } : {}),
    ...(caHash ? { caHash } : {}),
  });
  const streams: Record<string, StreamHandler> = { ...(options.streams ?? {}) };
  if (kubeApiTarget) streams["kube-api"] = tcpStreamHandler(kubeApiTarget);
  const client = createTunnelClient({ ...rest, credentials, credentialStore: store, streams });
  client.start();
  return client;
}
