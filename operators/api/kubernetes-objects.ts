// The Kubernetes kinds a Bundle may hold (schemas/bundle.schema.json's BundleKind), each with its
// API version and the real OpenAPI schema of that kind (kubernetes-models' precompiled
// validators, the same source as Jobs' pod templates), so a plain manifest is checked like the
// API server would before it reaches any cluster.

import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { ErrorObject } from "ajv";
import type { BundleKind } from "./generated/index.ts";
import { translate } from "./kubernetes-templates.ts";
import type { SchemaViolation } from "./violations.ts";

interface StandaloneValidate {
  (data: unknown, options: { instancePath: string }): boolean;
  errors?: ErrorObject[] | null;
}

const requireModel = createRequire(import.meta.url);

/**
 * The validator of one kubernetes-models schema, loaded the first time a Bundle holds that kind:
 * the sixteen of them weigh ~25 MiB of heap that `rlark validate` of a repository without
 * Bundles never needs. Synchronous (require of an ES module), so checking stays synchronous.
 */
function v(schema: string): StandaloneValidate {
  let loaded: StandaloneValidate | undefined;
  const validate: StandaloneValidate = (data, options) => {
    // The package exports its schemas to `import` only: resolve as an import, then load the file.
    loaded ??= (
      requireModel(fileURLToPath(import.meta.resolve(`kubernetes-models/_schemas/${schema}`))) as {
        validate: StandaloneValidate;
      }
    ).validate;
    const valid = loaded(data, options);
    validate.errors = loaded.errors ?? null;
    return valid;
  };
  return validate;
}

/** Kind → its API version and validator. Every BundleKind has one (tests/api checks it). */
export const BUNDLE_KINDS: Readonly<
  Record<BundleKind, { apiVersion: string; validate: StandaloneValidate }>
> = {
  ConfigMap: { apiVersion: "v1", validate: v("IoK8sApiCoreV1ConfigMap") },
  PersistentVolumeClaim: { apiVersion: "v1", validate: v("IoK8sApiCoreV1PersistentVolumeClaim") },
  Pod: { apiVersion: "v1", validate: v("IoK8sApiCoreV1Pod") },
  Service: { apiVersion: "v1", validate: v("IoK8sApiCoreV1Service") },
  ServiceAccount: { apiVersion: "v1", validate: v("IoK8sApiCoreV1ServiceAccount") },
  DaemonSet: { apiVersion: "apps/v1", validate: v("IoK8sApiAppsV1DaemonSet") },
  Deployment: { apiVersion: "apps/v1", validate: v("IoK8sApiAppsV1Deployment") },
  StatefulSet: { apiVersion: "apps/v1", validate: v("IoK8sApiAppsV1StatefulSet") },
  HorizontalPodAutoscaler: {
    apiVersion: "autoscaling/v2",
    validate: v("IoK8sApiAutoscalingV2HorizontalPodAutoscaler"),
  },
  CronJob: { apiVersion: "batch/v1", validate: v("IoK8sApiBatchV1CronJob") },
  Job: { apiVersion: "batch/v1", validate: v("IoK8sApiBatchV1Job") },
  Ingress: { apiVersion: "networking.k8s.io/v1", validate: v("IoK8sApiNetworkingV1Ingress") },
  NetworkPolicy: { apiVersion: "networking.k8s.io/v1", validate: v("IoK8sApiNetworkingV1NetworkPolicy") },
  PodDisruptionBudget: { apiVersion: "policy/v1", validate: v("IoK8sApiPolicyV1PodDisruptionBudget") },
  Role: { apiVersion: "rbac.authorization.k8s.io/v1", validate: v("IoK8sApiRbacV1Role") },
  RoleBinding: { apiVersion: "rbac.authorization.k8s.io/v1", validate: v("IoK8sApiRbacV1RoleBinding") },
};

/** What a Bundle may hold when it names no allowedKinds: seed 003's whitelist, plus the workload kinds. */
export const DEFAULT_BUNDLE_KINDS: readonly BundleKind[] = [
  "Deployment",
  "StatefulSet",
  "DaemonSet",
  "Service",
  "ConfigMap",
  "Pod",
  "Job",
  "CronJob",
];

export function isBundleKind(kind: string): kind is BundleKind {
  return Object.hasOwn(BUNDLE_KINDS, kind);
}

/** Violations of the kind's Kubernetes schema (apiVersion included), JSON pointers into `object`. */
export function checkKubernetesObject(kind: BundleKind, object: unknown): SchemaViolation[] {
  const { validate } = BUNDLE_KINDS[kind];
  if (validate(object, { instancePath: "" })) return [];
  return translate(validate.errors ?? [], object);
}
