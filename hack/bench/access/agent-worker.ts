// The bench's agent on its own thread: in production the agent is its own process, so its
// event loop must not share the hub's (hack/bench/access/run.ts). Started with the enrollment
// in workerData; posts {ready, hopPid} once connected; on "stop" stops the pods, then the agent.
import { parentPort, workerData } from "node:worker_threads";
import { startAgent } from "../../../operators/agent/index.ts";
import { ProcessRuntime } from "../../../operators/agent/runtimes/process/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { fileCredentialStore } from "../../../operators/lib/tunnel/index.ts";

interface AgentWorkerData {
  hub: string;
  token: string;
  caHash: string;
  stateDir: string;
  credentials: string;
  /** rlark-net for the agent's byte hop (ADR 0011), when the bench runs it. */
  accessHop?: string;
}

const data = workerData as AgentWorkerData;
const runtime = await ProcessRuntime.open({ stateDir: data.stateDir, terminationGracePeriodMs: 1000 });
const agent = await startAgent({
  hub: data.hub,
  credentials: fileCredentialStore(data.credentials),
  token: data.token,
  caHash: data.caHash,
  runtime,
  runtimeKind: "process",
  logger: silentLogger,
  ...(data.accessHop ? { accessHop: data.accessHop } : {}),
});
// The hop's pid, for its CPU seconds (0 without it).
parentPort?.postMessage({ ready: true, hopPid: agent.accessHop?.pid ?? 0 });
parentPort?.once("message", async () => {
  // Pods first: the agent's stop also stops the runtime, leaving its pods to a next agent.
  await runtime.stop({ terminatePods: true });
  await agent.stop();
  parentPort?.postMessage("stopped");
  parentPort?.close();
});
