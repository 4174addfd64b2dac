// Keeps `caBundle` of every webhook in our MutatingWebhookConfiguration equal to the CA that signs
// the serving certificate: at start and then periodically, so a re-apply of the manifests (which
// carry no caBundle) or a CA change never leaves kube-apiserver distrusting the webhook for long.
import { AdmissionregistrationV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { Clock } from "../../lib/clock.ts";
import type { Logger } from "../../lib/logger.ts";

/** Sets caBundle where it differs; returns how many webhooks were changed. */
export async function syncCaBundle(kubeConfig: KubeConfig, name: string, caPem: string): Promise<number> {
  const api = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const bundle = Buffer.from(caPem).toString("base64");
  const config = await api.readMutatingWebhookConfiguration({ name });
  let changed = 0;
  for (const webhook of config.webhooks ?? []) {
    if (webhook.clientConfig.caBundle === bundle) continue;
    webhook.clientConfig.caBundle = bundle;
    changed++;
  }
  // resourceVersion travels along: a concurrent edit makes this a conflict, retried next round.
  if (changed > 0) await api.replaceMutatingWebhookConfiguration({ name, body: config });
  return changed;
}

export function keepCaBundle(options: {
  kubeConfig: KubeConfig;
  name: string;
  caPem: string;
  intervalMs: number;
  clock: Clock;
  logger: Logger;
}): () => void {
  let stopped = false;
  let timer: ReturnType<Clock["setTimeout"]> | undefined;
  const round = async () => {
    try {
      const changed = await syncCaBundle(options.kubeConfig, options.name, options.caPem);
      if (changed > 0) options.logger.info("caBundle updated", { config: options.name, webhooks: changed });
    } catch (error) {
      options.logger.warn("cannot update caBundle; retrying", {
        config: options.name,
        error: (error as Error).message,
      });
    }
    if (!stopped) timer = options.clock.setTimeout(() => void round(), options.intervalMs);
  };
  void round();
  return () => {
    stopped = true;
    if (timer) options.clock.clearTimeout(timer);
  };
}
