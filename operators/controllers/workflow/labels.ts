// Labels and the finalizer the Workflow controller puts on what it owns. Defined here until the
// shared operators/controllers/labels.ts exists; the values are the contract, not the location.

/** On a Job: the Workflow that created it. */
export const WORKFLOW_LABEL = "rlinf.io/workflow";
/** On a Job: the DAG node (spec.jobs[].name) it runs. */
export const WORKFLOW_JOB_LABEL = "rlinf.io/workflow-job";
/** On a Job: the Workflow run (status.run) it belongs to, as a decimal string. */
export const WORKFLOW_RUN_LABEL = "rlark.io/workflow-run";
/** On a Workflow: its Jobs are deleted before the Workflow goes. */
export const WORKFLOW_FINALIZER = "rlark.io/workflow-jobs";
