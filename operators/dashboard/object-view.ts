// What the dashboard draws of an object: the object as the API serves it (redacted), less what no
// page shows and that would only weigh down the stream: workload templates (pod specs) of Jobs,
// Workflows and Tasks, certificates, and Bundles' manifests. With 10,000 Jobs this halves the first snapshot or better.
// The full objects stay at GET /api/v1/rlinf.io/v1alpha1/<plural>/<name>.
import { redact } from "../lib/http/index.ts";
import type { KubeObject } from "../lib/store/index.ts";

type Json = Record<string, unknown>;
const WORKLOADS = ["kubernetes", "raw", "docker"];

function withoutWorkloads(task: unknown): unknown {
  if (typeof task !== "object" || task === null) return task;
  const copy: Json = { ...(task as Json) };
  for (const key of WORKLOADS) if (key in copy) copy[key] = {};
  return copy;
}

function slimTemplates(spec: Json): Json {
  return Array.isArray(spec.tasks) ? { ...spec, tasks: spec.tasks.map(withoutWorkloads) } : spec;
}

export function objectView(object: KubeObject): KubeObject {
  const safe = redact(object);
  const spec = typeof safe.spec === "object" && safe.spec !== null ? (safe.spec as Json) : undefined;
  if (!spec) return safe;
  switch (safe.kind) {
    case "Job":
      return { ...safe, spec: slimTemplates(spec) };
    case "Task":
      return { ...safe, spec: withoutWorkloads(spec) };
    case "Workflow":
      return {
        ...safe,
        spec: {
          ...spec,
          jobs: Array.isArray(spec.jobs)
            ? spec.jobs.map((job: Json) => ({
                ...job,
                template: slimTemplates((job.template ?? {}) as Json),
              }))
            : spec.jobs,
        },
      };
    case "Bundle": {
      // The manifests stay at the API; the pages name each object only.
      const objects = Array.isArray(spec.objects) ? (spec.objects as Json[]) : [];
      return {
        ...safe,
        spec: {
          ...spec,
          objects: objects.map((o) => ({
            apiVersion: o.apiVersion,
            kind: o.kind,
            metadata: { name: (o.metadata as Json | undefined)?.name },
          })),
        },
      };
    }
    case "DomainPeer": {
      const { cert: _cert, ...rest } = spec;
      return { ...safe, spec: rest };
    }
    case "Domain": {
      const status = (safe.status ?? {}) as Json;
      const { certificate: _certificate, ...rest } = status;
      return safe.status ? { ...safe, status: rest } : safe;
    }
    default:
      return safe;
  }
}
