// API clients whose requests share one connection pool. KubeConfig.applySecurityAuthentication
// gives every request a new undici Agent, so each call paid a TCP and TLS handshake of its own
// (and read the client certificate files again): most of a server-side apply's time. Here the
// KubeConfig still authenticates every request (a refreshed token is used at once), but the
// requests go through one Agent with keep-alive, renewed every few minutes so that rotated
// client certificates and CAs are picked up.
import {
  AppsV1Api,
  CoreV1Api,
  createConfiguration,
  type KubeConfig,
  KubernetesObjectApi,
  type RequestContext,
  type SecurityAuthentication,
  ServerConfiguration,
  VersionApi,
} from "@kubernetes/client-node";

type Dispatcher = NonNullable<ReturnType<RequestContext["getDispatcher"]>>;

/** How long one pool serves before a fresh one (with freshly read certificates) takes over. */
const POOL_LIFETIME_MS = 5 * 60_000;

class PooledAuthentication implements SecurityAuthentication {
  readonly #kubeConfig: KubeConfig;
  #pool: { dispatcher: Dispatcher; since: number } | undefined;

  constructor(kubeConfig: KubeConfig) {
    this.#kubeConfig = kubeConfig;
  }

  getName(): string {
    return "kubeconfig authentication, pooled connections";
  }

  async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await this.#kubeConfig.applySecurityAuthentication(context);
    const fresh = context.getDispatcher();
    if (!fresh) return;
    const now = Date.now();
    if (!this.#pool || now - this.#pool.since > POOL_LIFETIME_MS) {
      // requests in flight on the old pool finish before it closes
      const old = this.#pool?.dispatcher;
      this.#pool = { dispatcher: fresh, since: now };
      void old?.close().catch(() => undefined);
      return;
    }
    context.setDispatcher(this.#pool.dispatcher);
    // never used, so never connected: closing it costs nothing
    void fresh.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    await pool?.dispatcher.close().catch(() => undefined);
  }
}

export interface ApiClients {
  core: CoreV1Api;
  apps: AppsV1Api;
  objects: KubernetesObjectApi;
  version: VersionApi;
  /** Closes the pooled connections once their requests are done. */
  close(): Promise<void>;
}

export function apiClients(kubeConfig: KubeConfig): ApiClients {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig has no current cluster");
  const auth = new PooledAuthentication(kubeConfig);
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: auth },
  });
  return {
    core: new CoreV1Api(configuration),
    apps: new AppsV1Api(configuration),
    // every object the runtime sends names its namespace: the client's default is never used
    objects: new KubernetesObjectApi(configuration),
    version: new VersionApi(configuration),
    close: () => auth.close(),
  };
}
