// A Secret the hub opened from a SealedSecret for this cluster (docs/secrets.md): the one object
// the agent takes that is a core Kubernetes kind, so it is checked here rather than by a schema.
// Refusals name the field, never a value.
import type { KubeObject } from "../lib/kube-object.ts";

export interface DesiredSecret {
  apiVersion: "v1";
  kind: "Secret";
  metadata: { name: string; namespace: string };
  type: "Opaque";
  /** Key to base64 value. Never log it. */
  data: Record<string, string>;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** Kubernetes' own bound on a Secret's data. */
const MAX_SECRET_BYTES = 1024 * 1024;

export function secretRefusal(object: KubeObject): { field: string; problem: string } | undefined {
  const { metadata } = object;
  if (!DNS1123_SUBDOMAIN.test(metadata.name) || metadata.name.length > 253)
    return { field: "/metadata/name", problem: "must be a DNS-1123 subdomain" };
  if (!metadata.namespace || !DNS1123_LABEL.test(metadata.namespace) || metadata.namespace.length > 63)
    return { field: "/metadata/namespace", problem: "must be a DNS-1123 label" };
  const { type, data } = object as { type?: unknown; data?: unknown };
  if (type !== "Opaque") return { field: "/type", problem: "must be Opaque" };
  if (typeof data !== "object" || data === null || Array.isArray(data))
    return { field: "/data", problem: "must be an object of base64 values" };
  let size = 0;
  for (const [key, value] of Object.entries(data)) {
    if (!SECRET_KEY.test(key) || key.length > 253)
      return { field: "/data", problem: "holds a key that is not a Secret key" };
    if (typeof value !== "string" || value.length % 4 !== 0 || !BASE64.test(value))
      return { field: `/data/${key}`, problem: "must be base64" };
    size += key.length + (value.length / 4) * 3;
  }
  if (size > MAX_SECRET_BYTES)
    return { field: "/data", problem: `holds more than ${MAX_SECRET_BYTES} bytes` };
  return undefined;
}
