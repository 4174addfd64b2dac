// What a summarised check (`rlark validate`) keeps of each object once its own checks are done:
// only the fields the rules that need the whole snapshot read at the end. The kinds a repository
// holds by the thousand (Jobs, Nodes, Users) keep a few strings each, so memory grows with the
// repository's names, not with its manifests. A rule that starts reading another field at the end
// must keep it here: tests/api/validate/examples.test.ts compares a summarised check with a full one.
import { isObject, type JsonObject } from "./rule-context.ts";

/** metadata.name and metadata.namespace: every object is indexed by them (unique names, scopes). */
function identity(object: JsonObject): JsonObject {
  const metadata = isObject(object.metadata) ? object.metadata : {};
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: pick(metadata, ["name", "namespace"]),
  };
}

function pick(object: JsonObject, keys: readonly string[]): JsonObject {
  const kept: JsonObject = {};
  for (const key of keys) if (object[key] !== undefined) kept[key] = object[key];
  return kept;
}

/** A Job spec's references to other objects (rules/job-specs.ts checked the rest as it was read). */
const JOB_REFERENCES = ["domain", "team"] as const;

const withoutTemplates = (tasks: unknown) =>
  Array.isArray(tasks)
    ? tasks.map((task) => {
        if (!isObject(task) || !isObject(task.kubernetes)) return task;
        const workload = isObject(task.kubernetes.workload)
          ? { kind: task.kubernetes.workload.kind }
          : undefined;
        return { ...task, kubernetes: { workload } };
      })
    : tasks;

/** The part of `object` (of `kind`) the end-of-snapshot rules read. */
export function compact(kind: string, object: JsonObject): JsonObject {
  const spec = isObject(object.spec) ? object.spec : undefined;
  switch (kind) {
    case "Job":
      // jobSpecRules (domain) and teamRules (team).
      return spec ? { ...identity(object), spec: pick(spec, JOB_REFERENCES) } : identity(object);
    case "Node":
      // clusterReferenceRules: the namespace names the cluster.
      return identity(object);
    case "User":
      // sshKeyRules; the other rules want the name only.
      return spec ? { ...identity(object), spec: pick(spec, ["sshPublicKeys"]) } : identity(object);
    case "Workflow":
      // workflowDagRules read the jobs; their templates' references are checked like a Job's.
      if (spec && Array.isArray(spec.jobs)) {
        const jobs = spec.jobs.map((job) =>
          isObject(job) && isObject(job.template)
            ? { ...job, template: { ...job.template, tasks: withoutTemplates(job.template.tasks) } }
            : job,
        );
        return { ...object, spec: { ...spec, jobs } };
      }
      return object;
    default:
      // Few of each in a repository, and several rules read most of their fields.
      return object;
  }
}
