// The API server's gitVersion (/version, readable by every authenticated identity), read at
// start and again now and then: the control plane may be upgraded under a running agent. Each
// read is also the cluster's connectivity test (Cluster status.lastTestedAt / lastTestOk).
import type { VersionApi } from "@kubernetes/client-node";
import { type Clock, systemClock } from "../../../../lib/clock.ts";
import { ApplyLoop } from "../../../../lib/controller/loop/index.ts";
import type { Logger } from "../../../../lib/logger.ts";
import type { ConnectivityTest } from "../../types.ts";
import { describeApiError } from "../api-error.ts";

export class KubernetesVersion {
  readonly #api: VersionApi;
  readonly #logger: Logger;
  readonly #onChange: () => void;
  readonly #clock: Clock;
  #loop: ApplyLoop<void> | undefined;
  #current: string | undefined;
  #lastTest: ConnectivityTest | undefined;

  constructor(api: VersionApi, logger: Logger, onChange: () => void, clock: Clock = systemClock) {
    this.#api = api;
    this.#logger = logger;
    this.#onChange = onChange;
    this.#clock = clock;
  }

  /** The last gitVersion read; undefined until one could be. */
  get current(): string | undefined {
    return this.#current;
  }

  /** The last read's outcome; undefined before the first. */
  get lastTest(): ConnectivityTest | undefined {
    return this.#lastTest;
  }

  /** Reads now and then every `intervalMs` until stopped; resolves when the first read is over. */
  start(intervalMs: number): Promise<void> {
    this.#loop = new ApplyLoop<void>({
      name: "Kubernetes version",
      run: async () => {
        await this.#read();
        return { requeueAfter: intervalMs };
      },
      clock: this.#clock,
    });
    return this.#loop.set();
  }

  stop(): Promise<void> {
    return this.#loop?.stop() ?? Promise.resolve();
  }

  async #read(): Promise<void> {
    const testedAt = new Date(this.#clock.now()).toISOString();
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
}
