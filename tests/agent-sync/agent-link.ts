// A hub-side AgentSession wired to the agent-sync over an in-process stream, with the agent's
// end of the same NDJSON channel: what the tunnel server hands the hub after an agent's hello,
// without SSH. The test plays the agent: it reads snapshots and deltas and sends acks and reports.

import { duplexPair } from "node:stream";
import type { AgentSync } from "../../operators/agent-sync/index.ts";
import type { KubeObject } from "../../operators/lib/store/index.ts";
import {
  type AgentMessage,
  AgentSession,
  type Capability,
  type HubMessage,
  MessageChannel,
  parseAgentMessage,
  parseHubMessage,
  type KubeObject as WireObject,
} from "../../operators/lib/tunnel/index.ts";

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface AgentLink {
  cluster: string;
  /** Every snapshot and delta the hub sent, in order. */
  received: HubMessage[];
  ack(generation: number): void;
  report(pods: KubeObject[], tasks: KubeObject[], capabilities: Capability[]): void;
}

export function connectAgent(t: Teardown, sync: AgentSync, cluster: string): AgentLink {
  const [hubEnd, agentEnd] = duplexPair();
  const hubChannel = new MessageChannel<AgentMessage, HubMessage>(hubEnd, { parse: parseAgentMessage });
  const agentChannel = new MessageChannel<HubMessage, AgentMessage>(agentEnd, { parse: parseHubMessage });
  const session = new AgentSession(
    hubChannel,
    { role: "agent", name: cluster, cluster, serial: "01", notBefore: 0, notAfter: 0, publicKeyPem: "" },
    "",
    { type: "hello", cluster, agentVersion: "test", bootId: "boot-1", runtime: "process", capabilities: [] },
  );
  // As the tunnel server does after hello: acknowledgements recorded first, then every message
  // handed to the session.
  hubChannel.on("message", (message) => {
    if (message.type === "ack") session.recordAck(message.generation);
    session.emit("message", message);
  });
  hubChannel.on("close", () => session.emit("close"));
  const received: HubMessage[] = [];
  agentChannel.on("message", (message) => received.push(message));
  sync.onAgentSession(session);
  t.teardown(() => agentChannel.close());
  const wire = (objects: KubeObject[]) => objects as unknown as WireObject[];
  return {
    cluster,
    received,
    ack: (generation) => agentChannel.send({ type: "ack", generation }),
    report: (pods, tasks, capabilities) =>
      agentChannel.send({ type: "report", nodes: [], pods: wire(pods), tasks: wire(tasks), capabilities }),
  };
}
