// Labels the Domain controller reads (set by the agents on Pods; shared, ../labels.ts) and sets
// (on DomainPeers; only this controller uses them).

/** On a Pod (and Task): the Job it belongs to; on a Pod, the Task it runs. */
export { JOB_LABEL, TASK_LABEL } from "../labels.ts";

/** On a DomainPeer: the Domain it is a view of. */
export const DOMAIN_LABEL = "rlark.io/domain";
/** A cluster's objects live in the namespace `agent-<cluster>`. */
export const AGENT_NAMESPACE_PREFIX = "agent-";
