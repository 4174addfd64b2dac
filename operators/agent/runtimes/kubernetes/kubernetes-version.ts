// The API server's gitVersion (/version, readable by every authenticated identity), read at
// start and again now and then: the control plane may be upgraded under a running agent.
import type { VersionApi } from "@kubernetes/client-node";
import type { Logger } from "../../../lib/logger.ts";
import { describeApiError } from "./api-error.ts";

export class KubernetesVersion {
  readonly #api: VersionApi;
  readonly #logger: Logger;
  readonly #onChange: () => void;
  #current: string | undefined;
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

  async read(): Promise<void> {
    try {
      const { gitVersion } = await this.#api.getCode();
      if (gitVersion !== this.#current) {
        this.#current = gitVersion;
        this.#onChange();
      }
    } catch (err) {
      this.#logger.warn("could not read the Kubernetes version", {
        error: describeApiError(err, "/version"),
      });
    }
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
