// The API server's gitVersion (/version, readable by every authenticated identity), read at
// start and again now and then: the control plane may be upgraded under a running agent. Each
// read is also the cluster's connectivity test (Cluster status.lastTestedAt / lastTestOk).
import type { VersionApi } from "@kubernetes/client-node";
import type { Logger } from "../../../lib/logger.ts";
import type { ConnectivityTest } from "../types.ts";
import { describeApiError } from "./api-error.ts";

export class KubernetesVersion {
  readonly #api: VersionApi;
  readonly #logger: Logger;
  readonly #onChange: () => void;
  #current: string | undefined;
  #lastTest: ConnectivityTest | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(api: VersionApi, logger: Logger, onChange: () => void) {
    this.#api = api;
    this.#logger = logger;
    this.#onChange = onChange;
  }

  /** The last gitVersion read; undefined until one could be. */
  get current(): string | undefined {
    return this.#current;
  }

  /** The last read's outcome; undefined before the first. */
  get lastTest(): ConnectivityTest | undefined {
    return this.#lastTest;
  }

  async read(): Promise<void> {
    const testedAt = new Date().toISOString();
    try {
      const { gitVersion } = await this.#api.getCode();
      this.#current = gitVersion;
      this.#lastTest = { testedAt, ok: true };
    } catch (err) {
      const message = describeApiError(err, "/version");
      this.#lastTest = { testedAt, ok: false, message };
      this.#logger.warn("could not read the Kubernetes version", { error: message });
    }
    // every read is news: the report carries its time
    this.#onChange();
  }

  /** Reads again every `intervalMs` until stopped. */
  poll(intervalMs: number): void {
    this.#timer = setTimeout(() => {
      void this.read().finally(() => {
        if (!this.#stopped) this.poll(intervalMs);
      });
    }, intervalMs);
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }
}
