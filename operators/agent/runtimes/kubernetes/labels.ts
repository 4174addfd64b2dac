// Label and annotation keys the kubernetes runtime writes and selects on. rlinf.io/* follow the
// seeds, so workloads made by the original system's agent are recognised; rlark.io/* are ours.

export const FIELD_MANAGER = "rlark-agent";

export const LABEL_JOB = "rlinf.io/job";
/** The task template's name within its Job, as on the hub's Task (the seeds' label). */
export const LABEL_TASK = "rlinf.io/task";
/** The Task object's name (`<job>-<task>`): what the runtime selects, groups and prunes by. */
export const LABEL_TASK_NAME = "rlark.io/task";
export const LABEL_MANAGED_BY = "rlark.io/managed-by";
export const MANAGED_BY = "rlark-agent";
/** Set only when several runtimes share a cluster (tests): each selects its own objects. */
export const LABEL_INSTANCE = "rlark.io/agent-instance";
/** What a rendered object is for: workload, ssh, ray-scripts, ray-head, headless. */
export const LABEL_COMPONENT = "rlark.io/component";

export const ANNOTATION_TASK_UID = "rlark.io/task-uid";
export const ANNOTATION_TASK_GENERATION = "rlark.io/task-generation";
/** The Task namespace on the hub (agent-<cluster>), for people reading the cluster. */
export const ANNOTATION_TASK_NAMESPACE = "rlark.io/task-namespace";

export const ANNOTATION_RAY_ROLE = "rlinf.io/ray-role";
export const ANNOTATION_RAY_TOTAL_NODES = "rlinf.io/ray-total-nodes";
export const ANNOTATION_RAY_HEAD_TASK = "rlinf.io/ray-head-task-name";

/** On a Node: which label and annotation keys (and cordon) the git overlay set, so they can be reverted. */
export const ANNOTATION_OVERLAY_KEYS = "rlark.io/overlay-keys";

/** Selects every object this runtime manages. */
export const MANAGED_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;
