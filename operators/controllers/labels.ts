// Label, annotation and finalizer names the controllers share (with the agents and the seeds).

/** On Tasks and Pods: the Job they belong to. */
export const JOB_LABEL = "rlinf.io/job";
/** On Tasks: the task template name in the Job. */
export const TASK_LABEL = "rlinf.io/task";
/** On Jobs created by a Workflow: the Workflow's name. */
export const WORKFLOW_LABEL = "rlinf.io/workflow";
/** On Tasks: the Job run they belong to (a decimal string). */
export const RUN_LABEL = "rlark.io/run";
/** On Jobs: changing it starts a fresh run of a Job (a restart). */
export const RUN_ANNOTATION = "rlinf.io/run";
/** Ray keys copied from task templates onto Tasks. */
export const RAY_ROLE_ANNOTATION = "rlinf.io/ray-role";

/** On Tasks: the agent removes the workloads and PVCs, then the hub's tunnel glue removes this. */
export const AGENT_CLEANUP_FINALIZER = "rlark.io/agent-cleanup";
/** On Jobs: the Job controller stops the Job (Tasks gone) before it lets the Job go. */
export const JOB_STOP_FINALIZER = "rlark.io/job-stop";
