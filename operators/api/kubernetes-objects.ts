// The Kubernetes kinds a Bundle may hold (schemas/bundle.schema.json's BundleKind), each with its
// API version and the real OpenAPI schema of that kind (kubernetes-models' precompiled
// validators, the same source as Jobs' pod templates), so a plain manifest is checked like the
// API server would before it reaches any cluster.

import type { ErrorObject } from "ajv";
import { validate as daemonSet } from "kubernetes-models/_schemas/IoK8sApiAppsV1DaemonSet";
import { validate as deployment } from "kubernetes-models/_schemas/IoK8sApiAppsV1Deployment";
import { validate as statefulSet } from "kubernetes-models/_schemas/IoK8sApiAppsV1StatefulSet";
import { validate as horizontalPodAutoscaler } from "kubernetes-models/_schemas/IoK8sApiAutoscalingV2HorizontalPodAutoscaler";
import { validate as cronJob } from "kubernetes-models/_schemas/IoK8sApiBatchV1CronJob";
import { validate as job } from "kubernetes-models/_schemas/IoK8sApiBatchV1Job";
import { validate as configMap } from "kubernetes-models/_schemas/IoK8sApiCoreV1ConfigMap";
import { validate as persistentVolumeClaim } from "kubernetes-models/_schemas/IoK8sApiCoreV1PersistentVolumeClaim";
import { validate as pod } from "kubernetes-models/_schemas/IoK8sApiCoreV1Pod";
import { validate as service } from "kubernetes-models/_schemas/IoK8sApiCoreV1Service";
import { validate as serviceAccount } from "kubernetes-models/_schemas/IoK8sApiCoreV1ServiceAccount";
import { validate as ingress } from "kubernetes-models/_schemas/IoK8sApiNetworkingV1Ingress";
import { validate as networkPolicy } from "kubernetes-models/_schemas/IoK8sApiNetworkingV1NetworkPolicy";
import { validate as podDisruptionBudget } from "kubernetes-models/_schemas/IoK8sApiPolicyV1PodDisruptionBudget";
import { validate as role } from "kubernetes-models/_schemas/IoK8sApiRbacV1Role";
import { validate as roleBinding } from "kubernetes-models/_schemas/IoK8sApiRbacV1RoleBinding";
import type { BundleKind } from "./generated/index.ts";
import { translate } from "./kubernetes-templates.ts";
import type { SchemaViolation } from "./violations.ts";

interface StandaloneValidate {
  (data: unknown, options: { instancePath: string }): boolean;
  errors?: ErrorObject[] | null;
}

const v = (f: unknown) => f as StandaloneValidate;

/** Kind → its API version and validator. Every BundleKind has one (tests/api checks it). */
export const BUNDLE_KINDS: Readonly<
  Record<BundleKind, { apiVersion: string; validate: StandaloneValidate }>
> = {
  ConfigMap: { apiVersion: "v1", validate: v(configMap) },
  PersistentVolumeClaim: { apiVersion: "v1", validate: v(persistentVolumeClaim) },
  Pod: { apiVersion: "v1", validate: v(pod) },
  Service: { apiVersion: "v1", validate: v(service) },
  ServiceAccount: { apiVersion: "v1", validate: v(serviceAccount) },
  DaemonSet: { apiVersion: "apps/v1", validate: v(daemonSet) },
  Deployment: { apiVersion: "apps/v1", validate: v(deployment) },
  StatefulSet: { apiVersion: "apps/v1", validate: v(statefulSet) },
  HorizontalPodAutoscaler: { apiVersion: "autoscaling/v2", validate: v(horizontalPodAutoscaler) },
  CronJob: { apiVersion: "batch/v1", validate: v(cronJob) },
  Job: { apiVersion: "batch/v1", validate: v(job) },
  Ingress: { apiVersion: "networking.k8s.io/v1", validate: v(ingress) },
  NetworkPolicy: { apiVersion: "networking.k8s.io/v1", validate: v(networkPolicy) },
  PodDisruptionBudget: { apiVersion: "policy/v1", validate: v(podDisruptionBudget) },
  Role: { apiVersion: "rbac.authorization.k8s.io/v1", validate: v(role) },
  RoleBinding: { apiVersion: "rbac.authorization.k8s.io/v1", validate: v(roleBinding) },
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
