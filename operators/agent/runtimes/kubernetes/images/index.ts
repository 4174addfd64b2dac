// Image pre-pull on a Kubernetes cluster (docs/adr/0012-image-pre-pull.md): the Tasks' images on
// the nodes the hub placed them on (wanted-images.ts), pulled by pull pods (pull-pod.ts), a few at
// a time with backoff (shared/image-pre-pull.ts). The results go to ObservedNode.images.
import type { CoreV1Api, V1Node } from "@kubernetes/client-node";
import type { ImagePull } from "../../../../api/index.ts";
import type { Clock } from "../../../../lib/clock.ts";
import type { Logger } from "../../../../lib/logger.ts";
import { ImagePrePuller } from "../../shared/image-pre-pull.ts";
import type { RuntimeTask } from "../../types.ts";
import { describeApiError } from "../api-error.ts";
import type { WatchedCollection } from "../watch/watched-collection.ts";
import { deleteLeftoverPullPods, pullWithPod } from "./pull-pod.ts";
import { wantedImages } from "./wanted-images.ts";

export { PULL_POD_COMPONENT, pullPodSelector } from "./pull-pod.ts";

export interface ImagePrePullOptions {
  /** Pulls under way at once across the cluster. Default 2; 0 turns pre-pull off. */
  concurrency?: number;
  /** Images followed per node. Default 64. */
  maxImagesPerNode?: number;
  /** First retry of a failed pull (doubling to 5 min). Default 10 s. */
  retryMs?: number;
  /** How often a pull pod is read. Default 1 s. */
  pollMs?: number;
}

export interface KubernetesImagePrePullInit {
  core: CoreV1Api;
  nodes: WatchedCollection<V1Node>;
  /** Where the pull pods go: the agent's own namespace. */
  namespace: string;
  instance: string | undefined;
  options: ImagePrePullOptions;
  logger: Logger;
  clock: Clock;
  onChange: () => void;
}

export class KubernetesImagePrePull {
  readonly #init: KubernetesImagePrePullInit;
  readonly #puller: ImagePrePuller | undefined;
  #cleaned: Promise<void> | undefined;

  constructor(init: KubernetesImagePrePullInit) {
    this.#init = init;
    const { options } = init;
    if (options.concurrency === 0) return;
    this.#puller = new ImagePrePuller({
      concurrency: options.concurrency ?? 2,
      maxImagesPerNode: options.maxImagesPerNode ?? 64,
      backoff: { initialMs: options.retryMs ?? 10_000 },
      clock: init.clock,
      logger: init.logger,
      onChange: init.onChange,
      pull: async (node, image, signal) => {
        await this.#cleanOnce();
        await pullWithPod(
          {
            core: init.core,
            namespace: init.namespace,
            instance: init.instance,
            clock: init.clock,
            pollMs: options.pollMs,
          },
          node,
          image,
          signal,
        );
      },
    });
  }

  /** The desired Tasks: their images are wanted on their placed nodes. */
  apply(tasks: readonly RuntimeTask[]): void {
    if (!this.#puller) return;
    const names = new Set([...this.#init.nodes.values()].map((n) => n.metadata?.name ?? ""));
    this.#puller.want(wantedImages(tasks, (node) => names.has(node)));
  }

  images(node: string): ImagePull[] | undefined {
    return this.#puller?.images(node);
  }

  stop(): Promise<void> {
    return this.#puller?.stop() ?? Promise.resolve();
  }

  /** Before the first pull: the pull pods an earlier agent left (it stopped mid-pull) go. */
  #cleanOnce(): Promise<void> {
    const { core, namespace, instance, logger } = this.#init;
    this.#cleaned ??= deleteLeftoverPullPods(core, namespace, instance).then(
      (count) => {
        if (count > 0) logger.info("deleted pull pods left by an earlier agent", { count });
      },
      (err: unknown) => {
        this.#cleaned = undefined;
        logger.info("the leftover pull pods could not be listed", { error: describeApiError(err) });
      },
    );
    return this.#cleaned;
  }
}
