// Labels the Domain controller reads (set by the agents on Pods) and sets (on DomainPeers).
// Defined here until the shared operators/controllers/labels.ts exists; the values are the
// contract, not the location.

/** On a Pod (and Task): the Job it belongs to. */
export const JOB_LABEL = "rlinf.io/job";
/** On a Pod: the Task it runs. */
export const TASK_LABEL = "rlinf.io/task";
/** On a DomainPeer: the Domain it is a view of. */
export const DOMAIN_LABEL = "rlark.io/domain";
/** A cluster's objects live in the namespace `agent-<cluster>`. */
export const AGENT_NAMESPACE_PREFIX = "agent-";
