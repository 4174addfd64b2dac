// Labels and the finalizer the Workflow controller puts on what it owns. The Workflow label is
// shared with the other controllers (../labels.ts); the rest only the Workflow controller uses.

/** On a Job: the Workflow that created it. */
export { WORKFLOW_LABEL } from "../labels.ts";

/** On a Job: the DAG node (spec.jobs[].name) it runs. */
export const WORKFLOW_JOB_LABEL = "rlinf.io/workflow-job";
/** On a Job: the Workflow run (status.run) it belongs to, as a decimal string. */
export const WORKFLOW_RUN_LABEL = "rlark.io/workflow-run";
/** On a Workflow: its Jobs are deleted before the Workflow goes. */
export const WORKFLOW_FINALIZER = "rlark.io/workflow-jobs";
