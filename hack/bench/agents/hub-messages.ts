// The IPC messages between the agents-at-scale benchmark and its hub and agent processes.

export type HubRequest =
  | { type: "setup"; clusters: string[] }
  | { type: "probe"; cluster: string; name: string }
  | { type: "stats" }
  | { type: "stop" };

export type HubReply =
  | { type: "ready"; at: number }
  | { type: "setup"; tokens: string[]; caHash: string; ssh: string }
  | { type: "probe"; name: string; sentAt: number }
  | { type: "stats"; cpuMicros: number; rssBytes: number; heapBytes: number; connected: number; at: number }
  | { type: "stopped" }
  | { type: "error"; message: string };

export type WorkerRequest =
  | { type: "start"; hub: string; caHash: string; agents: Array<{ cluster: string; token: string }> }
  | { type: "stop" };

export type WorkerReply =
  | { type: "enrolled"; count: number; ms: number; failures: Record<string, number> }
  | { type: "connected"; cluster: string; at: number }
  | { type: "disconnected"; cluster: string; at: number }
  | { type: "probe"; name: string; at: number }
  | { type: "reports"; sent: number }
  | { type: "stopped" }
  | { type: "error"; message: string };
