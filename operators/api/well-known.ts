// Well-known names on the wire and in the store, in one place (as Kubernetes' well_known_labels.go):
// the namespace rule that places an object on a cluster, labels, annotations, finalizers and the
// agent's field manager. The hub, the agents and the seeds must agree on every one of them.
// rlinf.io/* follow the seeds, so objects made by the original system are recognised; rlark.io/*
// are ours.

// The placement: a cluster's objects live in the namespace `agent-<cluster>`.

const AGENT_NAMESPACE_PREFIX = "agent-";

/** The namespace that places objects on `cluster`. */
export function namespaceFor(cluster: string): string {
  return `${AGENT_NAMESPACE_PREFIX}${cluster}`;
}

/** The cluster an `agent-<cluster>` namespace places objects on; undefined for any other namespace. */
export function clusterOf(namespace: string | undefined): string | undefined {
  if (!namespace?.startsWith(AGENT_NAMESPACE_PREFIX)) return undefined;
  const cluster = namespace.slice(AGENT_NAMESPACE_PREFIX.length);
  return cluster === "" ? undefined : cluster;
}

// Labels.

/** On Tasks, Pods and the workloads they run: the Job they belong to. */
export const JOB_LABEL = "rlinf.io/job";
/** On Tasks, Pods and workloads: the task template's name within its Job. */
export const TASK_LABEL = "rlinf.io/task";
/** On workloads: the Task object's name (`<job>-<task>`), what the kubernetes runtime selects by. */
export const TASK_NAME_LABEL = "rlark.io/task";
/** On Tasks: the Job run they belong to (a decimal string). */
export const RUN_LABEL = "rlark.io/run";
/** On Jobs created by a Workflow: the Workflow's name. */
export const WORKFLOW_LABEL = "rlinf.io/workflow";
/** On Jobs created by a Workflow: the DAG node (spec.jobs[].name) it runs. */
export const WORKFLOW_JOB_LABEL = "rlinf.io/workflow-job";
/** On Jobs created by a Workflow: the Workflow run (status.run) it belongs to, as a decimal string. */
export const WORKFLOW_RUN_LABEL = "rlark.io/workflow-run";
/** On DomainPeers: the Domain they are a view of. */
export const DOMAIN_LABEL = "rlark.io/domain";
/** Who owns an object: the source (MANAGED_BY_GIT) in the store, the agent on a cluster. */
export const MANAGED_BY_LABEL = "rlark.io/managed-by";
export const MANAGED_BY_GIT = "git";
export const MANAGED_BY_AGENT = "rlark-agent";
/** On a cluster's objects, only when several runtimes share the cluster (tests): whose they are. */
export const AGENT_INSTANCE_LABEL = "rlark.io/agent-instance";
/** On a cluster's objects: what a rendered object is for (workload, ssh, ray-scripts, ray-head, headless). */
export const COMPONENT_LABEL = "rlark.io/component";
/** COMPONENT_LABEL of image pre-pull's pull pods (docs/adr/0012-image-pre-pull.md). */
export const IMAGE_PRE_PULL_COMPONENT = "image-pre-pull";
/** On the local agent's node: it is an edge machine. */
export const EDGE_NODE_LABEL = "rlark.io/node-category-edge";

// Annotations.

/** On Jobs: changing it starts a fresh run of the Job (a restart). */
export const RUN_ANNOTATION = "rlinf.io/run";
/** Ray keys: set on task templates, copied onto Tasks and the workloads that run them. */
export const RAY_ROLE_ANNOTATION = "rlinf.io/ray-role";
export const RAY_TOTAL_NODES_ANNOTATION = "rlinf.io/ray-total-nodes";
export const RAY_HEAD_TASK_ANNOTATION = "rlinf.io/ray-head-task-name";
/** On task templates and Tasks: the port the task's pods serve TensorBoard on (docs/access.md). */
export const TENSORBOARD_PORT_ANNOTATION = "rlark.io/tensorboard-port";

/** The port a Task declares its TensorBoard on; undefined when it declares none. */
export function tensorBoardPort(task: {
  spec?: { annotations?: Record<string, string> };
}): number | undefined {
  const value = task.spec?.annotations?.[TENSORBOARD_PORT_ANNOTATION];
  const port = value === undefined ? Number.NaN : Number(value);
  return Number.isInteger(port) && port >= 1 && port <= 65535 ? port : undefined;
}

/** Where the hub serves a Task's TensorBoard (seed 000 §19); the trailing slash is part of it. */
export function tensorBoardPath(task: string): string {
  return `/api/v1/rlinf.io/v1alpha1/tasks/${encodeURIComponent(task)}/tensorboard/`;
}
/**
 * On a Task, set by the hub when it is created: the nodes placement counted its replicas on,
 * comma-separated, which the agent pre-pulls the Task's images onto (docs/adr/0012-image-pre-pull.md).
 * The cluster's own scheduler still makes the final choice.
 */
export const PLACED_NODES_ANNOTATION = "rlark.io/placed-nodes";
/** On workloads: the uid, generation and hub namespace of the Task they run. */
export const TASK_UID_ANNOTATION = "rlark.io/task-uid";
export const TASK_GENERATION_ANNOTATION = "rlark.io/task-generation";
export const TASK_NAMESPACE_ANNOTATION = "rlark.io/task-namespace";
/** On objects from git: the revision at which the object last changed. */
export const SOURCE_REVISION_ANNOTATION = "rlark.io/source-revision";
/** On objects from git: `path/in/repo.yaml:line` of the document the object comes from. */
export const SOURCE_FILE_ANNOTATION = "rlark.io/source-file";
/** On Nodes: the label and annotation keys (and cordon) the git overlay set, so they can be reverted. */
export const OVERLAY_KEYS_ANNOTATION = "rlark.io/overlay-keys";
/** On reported Nodes: the GPU models the process runtime found. */
export const GPU_MODEL_ANNOTATION = "rlark.io/gpu-model";

// Finalizers.

/** On Tasks: the agent removes the workloads and PVCs, then the hub's tunnel glue removes this. */
export const AGENT_CLEANUP_FINALIZER = "rlark.io/agent-cleanup";
/** On Jobs: the Job controller stops the Job (Tasks gone) before it lets the Job go. */
export const JOB_STOP_FINALIZER = "rlark.io/job-stop";
/** On Workflows: their Jobs are deleted before the Workflow goes. */
export const WORKFLOW_FINALIZER = "rlark.io/workflow-jobs";

// Server-side apply.

/** The field manager the agent applies to its cluster with. */
export const AGENT_FIELD_MANAGER = "rlark-agent";
/** The field manager the kubernetes agent applies Addons' objects with. */
export const ADDON_FIELD_MANAGER = "rlark-addon";

// Addons (docs/addons.md).

/** On every object an Addon installs in a cluster: managed-by value of those objects. */
export const MANAGED_BY_ADDON = "rlark-addon";
/** On every object an Addon installs, and on its AddonRelease in the hub: the Addon's name. */
export const ADDON_LABEL = "rlark.io/addon";

// Bundles (docs/bundles.md).

/** The field manager the kubernetes agent applies Bundles' objects with. */
export const BUNDLE_FIELD_MANAGER = "rlark-bundle";
/** On every object a Bundle applies: managed-by value of those objects. */
export const MANAGED_BY_BUNDLE = "rlark-bundle";
/**
 * On every object a Bundle applies, and on its BundleRelease in the hub: the Bundle's name. Prune
 * deletes only objects that carry it, so nothing a Bundle did not create is ever deleted.
 */
export const BUNDLE_LABEL = "rlark.io/bundle";

// SealedSecrets (docs/secrets.md).

/** On every Secret the kubernetes agent applies from a SealedSecret: what its prune selects. */
export const SEALED_SECRET_LABEL = "rlark.io/sealed-secret";
