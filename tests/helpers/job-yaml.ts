// Jobs as a repository holds them: YAML text, for tests that go through the manifest parser (and
// so name lines in it: the layouts below are what their line numbers count).
import type { RawRuntime } from "../../operators/api/index.ts";

/** A Job around `tasks` (list items of spec.tasks, as the task functions below write them). */
export function jobYaml(name: string, tasks: string[], spec: Record<string, string | boolean> = {}): string {
  const fields = Object.entries(spec).map(([key, value]) => `  ${key}: ${value}\n`);
  return `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: ${name}
spec:
${fields.join("")}  tasks:
${tasks.join("")}`;
}

export type RawTaskYaml = {
  /** The task's name; "main" unless given. */
  task?: string;
  command: string[];
  /** A repository file the task runs, and the SHA-256 the manifest declares for it. */
  artifact?: { url: string; sha256: string };
  /** Deployment: kept running, restarted when it exits (a server, a ticker); unset: the schema's default. */
  kind?: RawRuntime["kind"];
};

/** An Actor that runs `command` as a process. */
export function rawTaskYaml({ task = "main", command, artifact, kind }: RawTaskYaml): string {
  const artifactLines = artifact
    ? `        artifact:\n          url: ${artifact.url}\n          sha256: "${artifact.sha256}"\n`
    : "";
  return `    - name: ${task}
      role: Actor
      agentType: Raw
      raw:
${kind ? `        kind: ${kind}\n` : ""}${artifactLines}        command: [${command.map((word) => JSON.stringify(word)).join(", ")}]
`;
}

/** A Job of one Raw task; `artifact.url` is on line 12, column 16. */
export function rawJobYaml({ name, ...task }: RawTaskYaml & { name: string }): string {
  return jobYaml(name, [rawTaskYaml(task)]);
}

export type TrainerTaskYaml = {
  namespace: string;
  replicas: number;
  /** The container's resources, in YAML flow style: `{ requests: { cpu: "1" } }`. */
  resources: string;
  /** In YAML flow style. */
  nodeSelector?: string;
};

/** An Actor "trainer": a Deployment of the trainer image on a Kubernetes cluster. */
export function trainerTaskYaml({ namespace, replicas, resources, nodeSelector }: TrainerTaskYaml): string {
  return `    - name: trainer
      role: Actor
      agentType: Kubernetes
${nodeSelector ? `      nodeSelector: ${nodeSelector}\n` : ""}      kubernetes:
        workload:
          kind: Deployment
          replicas: ${replicas}
          template:
            namespace: ${namespace}
            spec:
              containers:
                - name: trainer
                  image: registry.local/rlark/trainer:1
                  resources: ${resources}
`;
}

/** A Cluster labelled `region: <name>` (for clusterSelectors), of the process runtime unless told. */
export const clusterYaml = (
  name: string,
  runtime: "process" | "kubernetes" | "docker" = "process",
) => `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: ${name}
  labels: { region: ${name} }
spec:
  runtime: ${runtime}
`;

export const domainYaml = (name: string, cidr: string) => `apiVersion: rlinf.io/v1alpha1
kind: Domain
metadata:
  name: ${name}
spec:
  cidr: ${cidr}
`;

/** The test catalog's Addon `demo` for the cluster `edge`, installed into `namespace`. */
export const demoAddonYaml = (
  namespace: string,
  version = "1.0.0",
  values?: string,
) => `apiVersion: rlinf.io/v1alpha1
kind: Addon
metadata:
  name: demo
  namespace: agent-edge
spec:
  addonName: demo
  version: ${version}
  namespace: ${namespace}
${values === undefined ? "" : `  values: ${values}\n`}`;
