// The Workflow controller: a Workflow's Jobs in DAG order (seed 000 §7).
//
//   manager.add(createWorkflowController());
//
// Each node becomes a Job `<workflow>-<node>` (spec = the node's template) labelled
// rlinf.io/workflow, rlinf.io/workflow-job and rlark.io/workflow-run, controlled by the Workflow.
// Roots start at once; a node starts when all its dependsOn Succeeded. failurePolicy StopAll
// stops running Jobs (spec.stopped) and never creates the rest; ContinueIndependent runs what
// does not depend on the failure. spec.stopped deletes every Job of the run, completed ones too;
// clearing it starts run+1 from the roots. A template edited in git reaches only Jobs not yet
// created. Deleting the Workflow deletes its Jobs first (finalizer rlark.io/workflow-jobs).
// See docs/workflows.md.

export { createWorkflowController } from "./controller.ts";
