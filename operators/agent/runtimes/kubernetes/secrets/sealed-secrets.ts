// The Secrets opened from SealedSecrets (docs/secrets.md): each applied as an Opaque Secret by
// server-side apply with this runtime's labels plus rlark.io/sealed-secret, and every Secret with
// those labels that is no longer in the set deleted. A Secret of the same name that this runtime
// did not make is never taken over. Values are never logged; errors name the Secret only.
import { createHash } from "node:crypto";
import {
  type CoreV1Api,
  type KubernetesObjectApi,
  PatchStrategy,
  type V1Secret,
} from "@kubernetes/client-node";
import {
  AGENT_FIELD_MANAGER,
  AGENT_INSTANCE_LABEL,
  MANAGED_BY_AGENT,
  MANAGED_BY_LABEL,
  SEALED_SECRET_LABEL,
} from "../../../../api/index.ts";
import type { Clock } from "../../../../lib/clock.ts";
import { ApplyLoop } from "../../../../lib/controller/loop/index.ts";
import type { Logger } from "../../../../lib/logger.ts";
import type { RuntimeSecret } from "../../types.ts";
import { apiErrorCode, describeApiError } from "../api-error.ts";
import { ensureNamespace } from "../namespace.ts";

export interface SealedSecretsWriterOptions {
  objects: KubernetesObjectApi;
  core: CoreV1Api;
  /** Selects what this runtime manages (managed-by, and its instance or none). */
  selector: string;
  instance?: string | undefined;
  logger: Logger;
  /** The first retry's delay (doubling to a minute). Default 5 s. */
  retryIntervalMs?: number | undefined;
  clock?: Clock | undefined;
}

const key = (secret: { metadata?: { namespace?: string; name?: string } }) =>
  `${secret.metadata?.namespace ?? ""}/${secret.metadata?.name ?? ""}`;

/** A digest of what was applied, so an unchanged Secret is not written again (and no plain data is kept). */
const digest = (secret: RuntimeSecret): string =>
  createHash("sha256")
    .update(JSON.stringify(Object.entries(secret.data).sort(([a], [b]) => (a < b ? -1 : 1))))
    .digest("base64");

export class SealedSecretsWriter {
  readonly #options: SealedSecretsWriterOptions;
  /** Secret key → digest of the data last applied. */
  readonly #applied = new Map<string, string>();
  /** Failures are logged by #sync itself, naming each Secret. */
  readonly #loop: ApplyLoop<readonly RuntimeSecret[]>;

  constructor(options: SealedSecretsWriterOptions) {
    this.#options = options;
    this.#loop = new ApplyLoop({
      name: "Secrets from SealedSecrets",
      run: (secrets) => this.#sync(secrets),
      baseMs: options.retryIntervalMs ?? 5000,
      ...(options.clock ? { clock: options.clock } : {}),
    });
  }

  /** Resolves once the cluster holds `secrets` and none other of ours; rejects naming what failed. */
  apply(secrets: readonly RuntimeSecret[]): Promise<void> {
    return this.#loop.set(secrets);
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  async #sync(secrets: readonly RuntimeSecret[]): Promise<void> {
    const failures: string[] = [];
    const wanted = new Set<string>();
    for (const secret of secrets) {
      wanted.add(key(secret));
      const problem = await this.#applyOne(secret);
      if (problem) failures.push(problem);
    }
    const pruneProblem = await this.#prune(wanted);
    if (pruneProblem) failures.push(pruneProblem);
    if (failures.length === 0) return;
    for (const failure of failures)
      this.#options.logger.warn("a Secret from a SealedSecret was not written", { error: failure });
    throw new Error(`Secrets from SealedSecrets: ${failures.join("; ")}`);
  }

  async #applyOne(secret: RuntimeSecret): Promise<string | undefined> {
    const { objects, core, instance } = this.#options;
    const { name, namespace } = secret.metadata;
    const where = `Secret ${namespace}/${name}`;
    const sum = digest(secret);
    if (this.#applied.get(key(secret)) === sum) return undefined;
    try {
      await ensureNamespace(core, namespace);
      if (!this.#applied.has(key(secret))) {
        const existing = await core.readNamespacedSecret({ name, namespace }).catch((err: unknown) => {
          if (apiErrorCode(err) === 404) return undefined;
          throw err;
        });
        const labels = existing?.metadata?.labels ?? {};
        if (
          existing &&
          (labels[MANAGED_BY_LABEL] !== MANAGED_BY_AGENT || labels[SEALED_SECRET_LABEL] !== "true")
        )
          return `${where} exists and was not made from a SealedSecret: it is left alone (delete it, or rename the SealedSecret)`;
      }
      await objects.patch(
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: {
            name,
            namespace,
            labels: {
              [MANAGED_BY_LABEL]: MANAGED_BY_AGENT,
              [SEALED_SECRET_LABEL]: "true",
              ...(instance ? { [AGENT_INSTANCE_LABEL]: instance } : {}),
            },
          },
          type: "Opaque",
          data: secret.data,
        } satisfies V1Secret,
        undefined,
        undefined,
        AGENT_FIELD_MANAGER,
        true,
        PatchStrategy.ServerSideApply,
      );
      this.#applied.set(key(secret), sum);
      return undefined;
    } catch (err) {
      return describeApiError(err, where);
    }
  }

  async #prune(wanted: ReadonlySet<string>): Promise<string | undefined> {
    const { objects, logger } = this.#options;
    let items: V1Secret[];
    try {
      const list = await objects.list<V1Secret>(
        "v1",
        "Secret",
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
        `${this.#options.selector},${SEALED_SECRET_LABEL}=true`,
      );
      items = list.items;
    } catch (err) {
      // An agent installed without fleet/agent-sealed-secrets may not list Secrets: while no
      // SealedSecret is meant for this cluster there is nothing it could have made, and a feature
      // nobody uses must not leave the runtime DEGRADED.
      if (apiErrorCode(err) === 403 && wanted.size === 0) return undefined;
      return describeApiError(err, "listing Secrets from SealedSecrets");
    }
    for (const secret of items) {
      if (wanted.has(key(secret)) || secret.metadata?.deletionTimestamp) continue;
      try {
        await objects.delete({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: secret.metadata?.name, namespace: secret.metadata?.namespace },
        });
        logger.info("deleted a Secret whose SealedSecret is gone", { secret: key(secret) });
      } catch (err) {
        if (apiErrorCode(err) !== 404) return describeApiError(err, `deleting Secret ${key(secret)}`);
      }
      this.#applied.delete(key(secret));
    }
    return undefined;
  }
}
