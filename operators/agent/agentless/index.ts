// Agentless clusters (Cluster spec.access: kubeconfig, seed 003): the hub's machine runs, for each
// one, the same agent and kubernetes runtime a cluster would run itself, with the kubeconfig
// sealed in git opened by the hub's keyring. Each in-process agent enrolls and connects to the
// hub's own SSH endpoint like any other (docs/adr/0010-agentless-clusters.md), so desired sets,
// reports, status, browsing and logs take the one path every cluster takes. Started by the cli
// next to the hub: the hub may not import the agent.
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { type KubeConfig, VersionApi } from "@kubernetes/client-node";
import packageJson from "../../../package.json" with { type: "json" };
import type { Cluster } from "../../api/index.ts";
import { type Clock, systemClock } from "../../lib/clock.ts";
import { ApplyLoop, type RunResult } from "../../lib/controller/loop/index.ts";
import type { Logger } from "../../lib/logger.ts";
import { clusterKubeconfigContext, type SealKeyring } from "../../lib/seal/index.ts";
import { type KeptWatch, keepWatching, modify, type Store } from "../../lib/store/index.ts";
import { type CredentialStore, fileCredentialStore } from "../../lib/tunnel/index.ts";
import { type Agent, startAgent } from "../agent.ts";
import { describeApiError } from "../runtimes/kubernetes/api-error.ts";
import {
  DEFAULT_NAMESPACE,
  KubernetesRuntime,
  type KubernetesRuntimeOptions,
  kubernetesDryRun,
} from "../runtimes/kubernetes/index.ts";
import type { ConnectivityTest } from "../runtimes/types.ts";
import { KubeconfigError, kubeConfigFrom } from "./kubeconfig.ts";
import {
  credentialRedactor,
  type Redact,
  redactingDryRun,
  redactingLogger,
  redactingRuntime,
} from "./redact-credentials.ts";

export { KubeconfigError, kubeConfigFrom } from "./kubeconfig.ts";

/** The on-demand test was asked of a Cluster this hub does not drive without an agent. */
export class NotAgentlessError extends Error {
  /** No Cluster of that name at all. */
  readonly notFound: boolean;
  constructor(message: string, notFound = false) {
    super(message);
    this.notFound = notFound;
  }
}

export interface AgentlessOptions {
  /** The hub's store: Clusters are read from it and their status written to it. */
  store: Store;
  /** The hub's sealing keyring (`<data-dir>/seal/`). */
  keyring: Pick<SealKeyring, "unseal">;
  /** The hub's SSH endpoint and CA fingerprint, as an agent enrolls with them. */
  hub: { sshAddress: string; caFingerprint: string };
  /** A bootstrap token for `cluster` (the hub's enrollment). */
  createToken(cluster: string): Promise<string>;
  /** Each cluster's agent credentials go under `<dir>/<cluster>/`. */
  dir: string;
  logger: Logger;
  /**
   * How soon a cluster that could not be driven is first tried again; failures in a row double it
   * (with jitter) up to 10 minutes. Default 60 s.
   */
  retryIntervalMs?: number;
  clock?: Clock;
  /** Extra runtime options (tests: instance, defaultNamespace, retryIntervalMs). */
  runtime?: Partial<Omit<KubernetesRuntimeOptions, "kubeConfig" | "logger">>;
  /** The agents' report interval. */
  reportIntervalMs?: number;
}

interface Driven {
  /** What the driver was started from: a change restarts it. */
  fingerprint: string;
  agent?: Agent;
  /** Could not be driven: the next pass tries again. */
  failed?: boolean;
}

const fingerprintOf = (cluster: Cluster): string => JSON.stringify(cluster.spec.kubeconfig ?? null);

/** The longest wait before a cluster that could not be driven is tried again. */
const MAX_RETRY_MS = 10 * 60_000;

export class AgentlessClusters {
  readonly #options: AgentlessOptions;
  readonly #driven = new Map<string, Driven>();
  readonly #clock: Clock;
  /** One pass at a time; Cluster changes during a pass make one more; failures back off. */
  readonly #loop: ApplyLoop<void>;
  /** Each Cluster's generation and deletion as last seen: status writes start no pass. */
  readonly #seen = new Map<string, string>();
  readonly #testing = new Map<string, Promise<ConnectivityTest & { kubernetesVersion?: string }>>();
  #watch: KeptWatch | undefined;

  constructor(options: AgentlessOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#loop = new ApplyLoop<void>({
      name: "agentless clusters",
      run: () => this.#reconcile(),
      clock: this.#clock,
      baseMs: options.retryIntervalMs ?? 60_000,
      maxMs: MAX_RETRY_MS,
      logger: options.logger,
    });
  }

  /** Clusters driven from here now, sorted. */
  get clusters(): string[] {
    return [...this.#driven.entries()]
      .filter(([, d]) => d.agent)
      .map(([name]) => name)
      .sort();
  }

  async start(): Promise<void> {
    const { store } = this.#options;
    const resourceVersion = await store.resourceVersion();
    // Kept open: a watch that ended (an apiserver restart) would miss every later Cluster change.
    this.#watch = await keepWatching(
      store,
      "Cluster",
      ({ type, object }) => {
        const name = object.metadata.name;
        const seen = `${object.metadata.generation}|${object.metadata.deletionTimestamp ?? ""}`;
        if (type !== "DELETED" && this.#seen.get(name) === seen) return;
        if (type === "DELETED") this.#seen.delete(name);
        else this.#seen.set(name, seen);
        this.#loop.kick();
      },
      { resourceVersion, logger: this.#options.logger, onResync: () => this.#loop.kick() },
    );
    await this.#loop.set();
  }

  async stop(): Promise<void> {
    this.#watch?.stop();
    await this.#loop.stop();
    await Promise.all([...this.#driven.values()].map((d) => d.agent?.stop()));
    this.#driven.clear();
  }

  /** Drives every Cluster with a kubeconfig, again those that failed; asks for a retry while any fails. */
  async #reconcile(): Promise<RunResult | undefined> {
    const { store, logger } = this.#options;
    const wanted = new Map<string, Cluster>();
    for (const object of (await store.list("Cluster")).items) {
      const cluster = object as unknown as Cluster;
      if (
        cluster.spec?.access === "kubeconfig" &&
        cluster.spec.kubeconfig &&
        !cluster.metadata.deletionTimestamp
      )
        wanted.set(cluster.metadata.name, cluster);
    }
    for (const [name, driven] of [...this.#driven]) {
      const cluster = wanted.get(name);
      if (cluster && fingerprintOf(cluster) === driven.fingerprint && !driven.failed) continue;
      this.#driven.delete(name);
      if (driven.agent) logger.info("stopping the agent of an agentless cluster", { cluster: name });
      await driven.agent?.stop();
      if (!cluster) {
        // its identity goes with it: a Cluster of that name registered later enrolls afresh
        await rm(path.join(this.#options.dir, name), { recursive: true, force: true });
        logger.info("agentless cluster no longer driven", { cluster: name });
      }
    }
    let failed = false;
    for (const [name, cluster] of wanted) {
      if (this.#driven.has(name)) continue;
      const driven: Driven = { fingerprint: fingerprintOf(cluster) };
      this.#driven.set(name, driven);
      try {
        driven.agent = await this.#drive(cluster);
        logger.info("driving agentless cluster", { cluster: name });
      } catch (error) {
        driven.failed = true;
        failed = true;
        const message = error instanceof Error ? error.message : String(error);
        logger.warn("agentless cluster not driven; trying again later", { cluster: name, error: message });
      }
    }
    return failed ? { retry: true } : undefined;
  }

  /**
   * The connectivity test on demand (`rlark cluster test NAME`, POST /api/v1/clusters/:cluster/test):
   * opens the Cluster's sealed kubeconfig and reads the Version API now, records the result in the
   * Cluster's status as the periodic test does, and, when it passes for a cluster that could not be
   * driven, tries to drive it at once instead of after its backoff. Throws NotAgentlessError for a
   * Cluster that is not agentless (its own agent tests it).
   */
  test(name: string): Promise<ConnectivityTest & { kubernetesVersion?: string }> {
    // One test per cluster at a time: callers asking meanwhile share its answer.
    const running = this.#testing.get(name);
    if (running) return running;
    const test = this.#test(name).finally(() => this.#testing.delete(name));
    this.#testing.set(name, test);
    return test;
  }

  async #test(name: string): Promise<ConnectivityTest & { kubernetesVersion?: string }> {
    const object = await this.#options.store.get("Cluster", undefined, name);
    const cluster = object as unknown as Cluster | undefined;
    if (!cluster) throw new NotAgentlessError(`no Cluster "${name}"`, true);
    if (cluster.spec?.access !== "kubeconfig" || !cluster.spec.kubeconfig)
      throw new NotAgentlessError(
        `Cluster "${name}" is not agentless (no spec.access: kubeconfig): its own agent tests its API every 60 s`,
      );
    const result = await this.#open(cluster).then(
      ({ version }) => ({ testedAt: this.#testedAt(), ok: true, kubernetesVersion: version }),
      (error: Error) => ({ testedAt: this.#testedAt(), ok: false, message: error.message }),
    );
    if (result.ok && this.#driven.get(name)?.failed) this.#loop.kick();
    return result;
  }

  /** Opens the kubeconfig and tests it (the Version API), recording the result in the Cluster's status. */
  async #open(cluster: Cluster): Promise<{ kubeConfig: KubeConfig; redact: Redact; version: string }> {
    const name = cluster.metadata.name;
    const spec = cluster.spec.kubeconfig;
    if (!spec) throw new Error("no spec.kubeconfig");
    // an API server may echo the credential in its errors: none is stored or logged unredacted
    let redact: Redact = (text) => text;
    const fail = async (reason: string) => {
      const message = redact(reason);
      await this.#writeTest(name, { testedAt: this.#testedAt(), ok: false, message });
      return new Error(message);
    };
    let kubeConfig: ReturnType<typeof kubeConfigFrom>;
    try {
      const plain = this.#options.keyring.unseal(spec.sealed, clusterKubeconfigContext(name));
      kubeConfig = kubeConfigFrom(plain.toString("utf8"), {
        ...(spec.server ? { server: spec.server } : {}),
        ...(spec.insecureSkipTLSVerify ? { insecureSkipTLSVerify: true } : {}),
      });
    } catch (error) {
      // SealError and KubeconfigError say what is wrong without quoting the content
      const reason = error instanceof KubeconfigError ? error.message : (error as Error).message;
      throw await fail(
        error instanceof KubeconfigError
          ? reason
          : `spec.kubeconfig.sealed does not open with this hub's keys: ${reason}`,
      );
    }
    redact = credentialRedactor(kubeConfig);
    try {
      const { gitVersion } = await kubeConfig.makeApiClient(VersionApi).getCode();
      await this.#writeTest(name, { testedAt: this.#testedAt(), ok: true }, gitVersion);
      return { kubeConfig, redact, version: gitVersion };
    } catch (error) {
      throw await fail(describeApiError(error, "/version"));
    }
  }

  /** Opens and tests the kubeconfig, and starts the runtime and its agent. */
  async #drive(cluster: Cluster): Promise<Agent> {
    const name = cluster.metadata.name;
    const { kubeConfig, redact } = await this.#open(cluster);
    const logger = redactingLogger(this.#options.logger, redact);
    const fail = async (reason: string) => {
      const message = redact(reason);
      await this.#writeTest(name, { testedAt: this.#testedAt(), ok: false, message });
      return new Error(message);
    };
    let runtime: KubernetesRuntime;
    try {
      runtime = await KubernetesRuntime.start({
        ...this.#options.runtime,
        kubeConfig,
        agentVersion: packageJson.version,
        logger,
      });
    } catch (error) {
      // reachable, but the kubeconfig's user may not do what an agent does (RBAC)
      throw await fail(`the cluster answers but cannot be driven: ${(error as Error).message}`);
    }
    try {
      await mkdir(path.join(this.#options.dir, name), { recursive: true, mode: 0o700 });
      const credentials = this.#credentials(name);
      const enrolled = (await credentials.load()) !== undefined;
      return await startAgent({
        hub: this.#options.hub.sshAddress,
        credentials,
        ...(enrolled
          ? {}
          : { token: await this.#options.createToken(name), caHash: this.#options.hub.caFingerprint }),
        runtime: redactingRuntime(runtime, redact),
        runtimeKind: "kubernetes",
        // Plans' dry-runs (Jobs' workloads, Bundles' diffs) as a cluster's own agent answers them.
        dryRun: redactingDryRun(
          kubernetesDryRun(
            kubeConfig,
            this.#options.runtime?.defaultNamespace ?? DEFAULT_NAMESPACE,
            (object) => runtime.checkSchema(object),
          ),
          redact,
        ),
        logger,
        ...(this.#options.reportIntervalMs ? { reportIntervalMs: this.#options.reportIntervalMs } : {}),
      });
    } catch (error) {
      await runtime.stop();
      throw new Error(redact((error as Error).message));
    }
  }

  #testedAt(): string {
    return new Date(this.#clock.now()).toISOString();
  }

  #credentials(cluster: string): CredentialStore {
    return fileCredentialStore(path.join(this.#options.dir, cluster, "credentials.json"));
  }

  async #writeTest(cluster: string, test: ConnectivityTest, kubernetesVersion?: string): Promise<void> {
    await modify(
      this.#options.store,
      "Cluster",
      undefined,
      cluster,
      (object) => {
        const status = { ...((object.status as Record<string, unknown> | undefined) ?? {}) };
        status.lastTestedAt = test.testedAt;
        status.lastTestOk = test.ok;
        if (test.message === undefined) delete status.lastTestMessage;
        else status.lastTestMessage = test.message.slice(0, 1024);
        if (kubernetesVersion) status.kubernetesVersion = kubernetesVersion;
        object.status = status;
      },
      { status: true },
    ).catch((error: unknown) =>
      this.#options.logger.warn("cluster status not written", { cluster, error: String(error) }),
    );
  }
}
