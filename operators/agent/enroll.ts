import { generateKeyPair } from "../lib/pki/index.ts";
import {
  type AgentCredentials,
  type BackoffOptions,
  backoffDelay,
  type CredentialStore,
  enrollAgent,
  parseHubAddresses,
} from "../lib/tunnel/index.ts";

export interface EnsureCredentialsOptions {
  store: CredentialStore;
  /** `host:port` of the hub's SSH endpoint (several, comma-separated, for HA hubs). */
  hub: string;
  /** Needed only on first start; ignored once credentials are stored. */
  token?: string;
  caHash?: string;
  now?: () => number;
  /** Attempts cut short (a hub killed, restarting or standing by) before giving up. Default 12. */
  attempts?: number;
  backoff?: BackoffOptions;
  /** Told of each attempt that failed and will be retried. */
  onRetry?: (error: Error, delayMs: number) => void;
}

/**
 * The agent's identity: what the store holds, or, on first start, a fresh enrollment with the
 * bootstrap token (saved before use so a restart never needs the token again). An enrollment cut
 * short (the connection lost: a hub killed or not leading) is tried again with the same key, on
 * the next hub address, with backoff: the hub certifies a token's first key again, so the retry
 * gets the certificate the lost answer carried. A refusal (the token unknown, expired or bound to
 * another key, the hub's identity wrong) is final once every address refused.
 */
export async function ensureAgentCredentials(options: EnsureCredentialsOptions): Promise<AgentCredentials> {
  const stored = await options.store.load();
  if (stored) return stored;
  if (!options.token || !options.caHash) {
    throw new Error(
      "this agent is not enrolled yet: run `rlark token create --cluster <name>` on the hub and pass --token and --ca-hash",
    );
  }
  const keyPair = (await options.store.enrollmentKey?.()) ?? generateKeyPair();
  const addresses = parseHubAddresses(options.hub);
  const attempts = options.attempts ?? 12;
  let refusals = 0;
  for (let attempt = 0; ; attempt++) {
    const { host, port } = addresses[attempt % addresses.length]!;
    try {
      const credentials = await enrollAgent({
        hub: `${host.includes(":") ? `[${host}]` : host}:${port}`,
        token: options.token,
        caHash: options.caHash,
        keyPair,
        ...(options.now ? { now: options.now } : {}),
      });
      await options.store.save(credentials);
      return credentials;
    } catch (err) {
      const error = err as Error;
      if (cutShort(error)) refusals = 0;
      else if (++refusals >= addresses.length) throw error;
      if (attempt + 1 >= attempts) throw error;
      // the next address at once; a round over all of them waits
      if ((attempt + 1) % addresses.length !== 0) continue;
      const delay = backoffDelay(Math.floor(attempt / addresses.length), options.backoff);
      options.onRetry?.(error, delay);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

const CUT_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ETIMEDOUT",
  "ECONNABORTED",
  "EHOSTUNREACH",
]);

/** The connection was lost or never made, as opposed to the hub saying no. */
function cutShort(error: Error): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  if (code && CUT_CODES.has(code)) return true;
  return /closed the enrollment connection|timed out|timeout|socket hang up|connect ECONN|read ECONN/i.test(
    error.message,
  );
}
