// kubectl-anchors.ts's agent on its own thread, with the kubernetes runtime on a fleet cluster: in
// production the agent is its own process, so its event loop must not share the hub's. Started
// with the enrollment in workerData; posts "ready" once connected; on "stop" stops the agent
// (the Job's pods are the bench's to delete, with its namespace).
import { parentPort, workerData } from "node:worker_threads";
import { KubeConfig } from "@kubernetes/client-node";
import { startAgent } from "../../../operators/agent/index.ts";
import { KubernetesRuntime } from "../../../operators/agent/runtimes/kubernetes/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { fileCredentialStore } from "../../../operators/lib/tunnel/index.ts";

interface KubeAgentWorkerData {
  hub: string;
  token: string;
  caHash: string;
  credentials: string;
  kubeconfig: string;
  namespace: string;
}

const data = workerData as KubeAgentWorkerData;
const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(data.kubeconfig);
const runtime = await KubernetesRuntime.start({
  kubeConfig,
  defaultNamespace: data.namespace,
  instance: "bench",
  logger: silentLogger,
});
const agent = await startAgent({
  hub: data.hub,
  credentials: fileCredentialStore(data.credentials),
  token: data.token,
  caHash: data.caHash,
  runtime,
  runtimeKind: "kubernetes",
  logger: silentLogger,
});
parentPort?.postMessage("ready");
parentPort?.once("message", async () => {
  await agent.stop();
  parentPort?.postMessage("stopped");
  parentPort?.close();
});
