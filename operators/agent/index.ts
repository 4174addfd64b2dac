// The agent's public face: the tunnel-driven agent, the playground's local agent and the runtime
// contract. The runtimes are entered through their own index.ts, so a process agent never loads
// the Kubernetes client.
export { type Agent, type AgentOptions, startAgent } from "./agent.ts";
export {
  cleanLocalAgent,
  type LocalAgentOptions,
  localPodProcesses,
  startLocalAgent,
} from "./local-agent.ts";
// Parsers of what crosses into the agent, entered by hack/fuzz.
export { parseStats, readNodeserverStats } from "./nodeserver-stats.ts";
export { nodeObject, podObject } from "./report.ts";
export { checkRequest, insideNamed, type PolicyOptions } from "./runtimes/shared/sftp-policy.ts";
export type { NodeOverlay, ObservedNode, ObservedPod, Runtime, RuntimeTask } from "./runtimes/types.ts";
