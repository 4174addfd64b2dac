// Placement: which cluster runs each task of a Job. All-or-nothing per Job, across clusters.
//
//   const snapshot = new PlacementSnapshot();           // fed from Cluster/Node/Task watch events
//   await snapshot.load(store);
//   const result = placeJob({ tasks: job.spec.tasks.map(placementTask), clusters: snapshot.clusters() });
//   if (result.placed) for (const p of result.tasks) snapshot.reserve(`agent-${p.cluster}/${job}-${p.task}`, p);
//   else condition(Scheduled=False, Unschedulable, result.message);
//
// placeJob is pure and deterministic: given the same views it gives the same answer, and it
// never counts more onto a node than the node's free figures allow.

export { type ClusterView, type NodeView, offlineSince } from "./cluster-view.ts";
export { type PlacementResult, placeJob, type TaskPlacement, type UnplacedReason } from "./place.ts";
export { type Amounts, amounts, formatAmount, milli } from "./resources.ts";
export { PlacementSnapshot } from "./snapshot.ts";
export { type PlacementTask, placementTask } from "./task-requirements.ts";
