// The soak's stream of commits, as a model: what git should say is desired after each commit
// (Jobs on the process cluster and on the kwok clusters, Workflows, Domains), the files that say
// it, and the next change drawn from the seed. Pure: the soak pushes what this returns, and the
// invariant checker compares what runs with the model of the last valid revision.
import type { Random } from "./random.ts";

export type Place = "local" | "kwok-1" | "kwok-2";

export interface JobModel {
  name: string;
  place: Place;
  /** Bumped by every change and every resume: each (job, gen) starts its process once. */
  gen: number;
  stopped: boolean;
}

export interface WorkflowModel {
  name: string;
  /** Bumped by every resume: a fresh execution, whose steps each run once. */
  gen: number;
  stopped: boolean;
}

export interface Desired {
  jobs: Record<string, JobModel>;
  workflows: Record<string, WorkflowModel>;
  domains: Record<string, { name: string; cidr: string }>;
  /** Names are never reused: a deleted object's leftovers stay told apart. */
  counter: number;
}

export interface RenderContext {
  /** In every task process's command line, so the soak finds (and at the end kills) them. */
  marker: string;
  /** Every task process appends a line here when it starts. */
  startsLog: string;
  /** Where the kwok clusters' workloads go. */
  namespace: string;
}

export type Change =
  | "create-job"
  | "change-job"
  | "stop-job"
  | "resume-job"
  | "delete-job"
  | "create-workflow"
  | "stop-workflow"
  | "resume-workflow"
  | "delete-workflow"
  | "create-domain"
  | "delete-domain"
  | "invalid"
  | "force-push";

export const emptyDesired = (): Desired => ({ jobs: {}, workflows: {}, domains: {}, counter: 0 });

const MAX_JOBS = 6;
const MAX_WORKFLOWS = 2;
const MAX_DOMAINS = 2;

/** A change that can apply to `desired` (force-push only with a commit to drop). */
export function nextChange(random: Random, desired: Desired, canForcePush: boolean): Change {
  for (;;) {
    const change = random.weighted<Change>({
      "create-job": 5,
      "change-job": 4,
      "stop-job": 2,
      "resume-job": 2,
      "delete-job": 2,
      "create-workflow": 1,
      "stop-workflow": 0.5,
      "resume-workflow": 0.5,
      "delete-workflow": 0.5,
      "create-domain": 0.7,
      "delete-domain": 0.5,
      invalid: 0.7,
      "force-push": 0.5,
    });
    if (applicable(change, desired, canForcePush)) return change;
  }
}

function applicable(change: Change, d: Desired, canForcePush: boolean): boolean {
  const jobs = Object.values(d.jobs);
  const workflows = Object.values(d.workflows);
  switch (change) {
    case "create-job":
      return jobs.length < MAX_JOBS;
    case "change-job":
    case "delete-job":
      return jobs.length > 0;
    case "stop-job":
      return jobs.some((j) => !j.stopped);
    case "resume-job":
      return jobs.some((j) => j.stopped);
    case "create-workflow":
      return workflows.length < MAX_WORKFLOWS;
    case "stop-workflow":
      return workflows.some((w) => !w.stopped);
    case "resume-workflow":
      return workflows.some((w) => w.stopped);
    case "delete-workflow":
      return workflows.length > 0;
    case "create-domain":
      return Object.keys(d.domains).length < MAX_DOMAINS;
    case "delete-domain":
      return Object.keys(d.domains).length > 0;
    case "invalid":
      return true;
    case "force-push":
      return canForcePush;
  }
}

/** The desired state after `change` (not invalid, not force-push: the soak handles those). */
export function applyChange(random: Random, before: Desired, change: Change): Desired {
  const d: Desired = structuredClone(before);
  const sorted = <T extends { name: string }>(o: Record<string, T>) =>
    Object.values(o).sort((a, b) => a.name.localeCompare(b.name));
  const jobs = sorted(d.jobs);
  const workflows = sorted(d.workflows);
  switch (change) {
    case "create-job": {
      const name = `j${++d.counter}`;
      d.jobs[name] = {
        name,
        place: random.pick<Place>(["local", "local", "kwok-1", "kwok-2"]),
        gen: 1,
        stopped: false,
      };
      break;
    }
    case "change-job":
      random.pick(jobs).gen++;
      break;
    case "stop-job":
      random.pick(jobs.filter((j) => !j.stopped)).stopped = true;
      break;
    case "resume-job": {
      const job = random.pick(jobs.filter((j) => j.stopped));
      job.stopped = false;
      job.gen++;
      break;
    }
    case "delete-job":
      delete d.jobs[random.pick(jobs).name];
      break;
    case "create-workflow": {
      const name = `w${++d.counter}`;
      d.workflows[name] = { name, gen: 1, stopped: false };
      break;
    }
    case "stop-workflow":
      random.pick(workflows.filter((w) => !w.stopped)).stopped = true;
      break;
    case "resume-workflow": {
      const workflow = random.pick(workflows.filter((w) => w.stopped));
      workflow.stopped = false;
      workflow.gen++;
      break;
    }
    case "delete-workflow":
      delete d.workflows[random.pick(workflows).name];
      break;
    case "create-domain": {
      const n = ++d.counter;
      d.domains[`d${n}`] = { name: `d${n}`, cidr: `10.${(n % 200) + 20}.0.0/16` };
      break;
    }
    case "delete-domain":
      delete d.domains[random.pick(Object.keys(d.domains).sort())];
      break;
    case "invalid":
    case "force-push":
      break;
  }
  return d;
}

/** The soak's clusters: the process cluster "local" (hub-processes.ts commits it) and the kwok ones. */
export function clusterFiles(): Record<string, string> {
  const cluster = (name: Place, runtime: string) =>
    `apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: ${name}\n  labels: { place: ${name} }\nspec:\n  runtime: ${runtime}\n`;
  return {
    "cluster.yaml": cluster("local", "process"),
    "kwok-1.yaml": cluster("kwok-1", "kubernetes"),
    "kwok-2.yaml": cluster("kwok-2", "kubernetes"),
  };
}

/** The key a task process writes to the starts log and carries in its command line. */
export const startKey = (kind: "job" | "step", name: string, gen: number) => `${kind}:${name}:g${gen}`;

function processTask(ctx: RenderContext, key: string, kind: "Deployment" | "Job", then: string): string {
  const script = `echo ${key} >> ${ctx.startsLog}; ${then}; true # ${ctx.marker} ${key}`;
  return `    - name: main
      role: Actor
      agentType: Raw
      clusterSelector: { matchLabels: { place: local } }
      raw:
        kind: ${kind}
        command: ["sh", "-c", ${JSON.stringify(script)}]
`;
}

function kwokTask(ctx: RenderContext, job: JobModel): string {
  return `    - name: main
      role: Actor
      agentType: Kubernetes
      clusterSelector: { matchLabels: { place: ${job.place} } }
      kubernetes:
        workload:
          kind: Deployment
          replicas: 1
          template:
            namespace: ${ctx.namespace}
            spec:
              containers:
                - name: main
                  image: registry.local/rlark/chaos:1
                  env: [{ name: GEN, value: "${job.gen}" }]
`;
}

/** Every file of the revision that says `desired` (an invalid revision adds broken.yaml). */
export function renderFiles(ctx: RenderContext, d: Desired, invalid = false): Record<string, string> {
  const files: Record<string, string> = { ...clusterFiles() };
  for (const job of Object.values(d.jobs)) {
    const task =
      job.place === "local"
        ? processTask(ctx, startKey("job", job.name, job.gen), "Deployment", "sleep 100000")
        : kwokTask(ctx, job);
    files[`jobs/${job.name}.yaml`] =
      `apiVersion: rlinf.io/v1alpha1\nkind: Job\nmetadata:\n  name: ${job.name}\nspec:\n  stopped: ${job.stopped}\n  tasks:\n${task}`;
  }
  for (const wf of Object.values(d.workflows)) {
    const step = (name: string, dependsOn: string) => {
      const task = processTask(ctx, startKey("step", `${wf.name}.${name}`, wf.gen), "Job", "sleep 1")
        .split("\n")
        .map((line) => (line === "" ? line : `      ${line}`))
        .join("\n");
      return `    - name: ${name}\n${dependsOn}      template:\n        tasks:\n${task}`;
    };
    files[`workflows/${wf.name}.yaml`] =
      `apiVersion: rlinf.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: ${wf.name}\nspec:\n  stopped: ${wf.stopped}\n  jobs:\n${step("first", "")}${step("second", "      dependsOn: [first]\n")}`;
  }
  for (const domain of Object.values(d.domains)) {
    files[`domains/${domain.name}.yaml`] =
      `apiVersion: rlinf.io/v1alpha1\nkind: Domain\nmetadata:\n  name: ${domain.name}\nspec:\n  cidr: ${domain.cidr}\n`;
  }
  if (invalid) {
    // A Job without tasks: the schema refuses it, and with it the whole revision.
    files["broken.yaml"] =
      "apiVersion: rlinf.io/v1alpha1\nkind: Job\nmetadata:\n  name: broken\nspec:\n  tasks: []\n";
  }
  return files;
}
