// The bed of the agentless attacker cases (issue 31): HTTPS servers on 127.0.0.1 with CAs of their
// own standing in for an agentless cluster's API server (the one its sealed kubeconfig names) and
// for a thief's; each records every request with its Authorization header. A hub on git with
// the agentless clusters run next to it as `rlark hub` runs them, its log lines kept.
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer } from "node:https";
import { PassThrough } from "node:stream";
import type { Test } from "tap";
import { makeCa, makeLeaf } from "../../hack/kube/pki.ts";
import { runAgentlessClusters } from "../../operators/cli/agentless.ts";
import { jsonLogger } from "../../operators/lib/logger.ts";
import { clusterKubeconfigContext, sealValue } from "../../operators/lib/seal/index.ts";
import { listenUntilTeardown } from "../agent/runtimes/kubernetes/api-server.ts";
import { type HubOnGitOptions, startHubOnGit } from "../helpers/hub-on-git.ts";

export interface StandIn {
  url: string;
  /** The CA of its certificate, base64 (a kubeconfig's certificate-authority-data). */
  caData: string;
  /** Every request so far: path and Authorization header. */
  requests: Array<{ path: string; authorization: string | undefined }>;
}

export type Answer = (req: IncomingMessage, res: ServerResponse) => void;

export async function standIn(t: Test, answer: Answer): Promise<StandIn> {
  const ca = makeCa(`stand-in-${randomBytes(3).toString("hex")}`);
  const leaf = makeLeaf(ca, {
    commonName: "127.0.0.1",
    server: { dnsNames: ["localhost"], ips: ["127.0.0.1"] },
  });
  const requests: StandIn["requests"] = [];
  const server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
    requests.push({ path: req.url ?? "", authorization: req.headers.authorization });
    answer(req, res);
  });
  const port = await listenUntilTeardown(t, server);
  return { url: `https://127.0.0.1:${port}`, caData: Buffer.from(ca.certPem).toString("base64"), requests };
}

/** A Kubernetes Status body, as the API server answers a failure. */
export function status(res: ServerResponse, code: number, message: string): void {
  res.writeHead(code, { "content-type": "application/json" });
  res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", message, code }));
}

export function version(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ major: "1", minor: "34", gitVersion: "v1.34.4" }));
}

export function kubeconfigFor(server: StandIn, token: string): string {
  return `apiVersion: v1
kind: Config
clusters:
  - name: lab
    cluster:
      server: ${server.url}
      certificate-authority-data: ${server.caData}
users:
  - name: lab-hub
    user:
      token: ${token}
contexts:
  - name: lab
    context: { cluster: lab, user: lab-hub }
current-context: lab
`;
}

/** A Cluster `name` driven with `sealed`; `extra` lines go under spec.kubeconfig. */
export function clusterYaml(name: string, sealed: string, extra: string[] = []): string {
  return `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: ${name}
spec:
  runtime: kubernetes
  access: kubeconfig
  kubeconfig:
    sealed: "${sealed}"
${extra.map((line) => `    ${line}\n`).join("")}`;
}

/** A hub on git and its agentless clusters; `lines` is everything either logged. */
export async function agentlessHub(t: Test, options: HubOnGitOptions = {}) {
  const logged = new PassThrough();
  const lines: string[] = [];
  logged.on("data", (chunk: Buffer) => lines.push(chunk.toString()));
  const started = await startHubOnGit(t, { ...options, logger: jsonLogger("hub", logged) });
  const run = await runAgentlessClusters(started.hub, started.dataDir, jsonLogger("agentless", logged), {
    retryIntervalMs: 300,
    reportIntervalMs: 300,
    runtime: {
      instance: `sec${randomBytes(3).toString("hex")}`,
      defaultNamespace: "default",
      retryIntervalMs: 300,
    },
  });
  t.teardown(() => run.stop());
  const seal = (cluster: string, kubeconfig: string) =>
    sealValue(kubeconfig, started.hub.sealKeys.currentPublicKeyPem(), clusterKubeconfigContext(cluster));
  return { ...started, run, lines, seal };
}
