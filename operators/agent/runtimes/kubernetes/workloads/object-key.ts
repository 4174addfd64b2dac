import type { KubernetesObject } from "@kubernetes/client-node";

/** apiVersion/kind/namespace/name: what apply keeps and prune compares against. */
export const objectKey = (o: KubernetesObject): string =>
  `${o.apiVersion}/${o.kind}/${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;
