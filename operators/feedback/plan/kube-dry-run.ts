// The hub's dry-runner: a server-side apply with dryRun=All, sent to the cluster's API server
// through the agent tunnel's `kube-api` stream. Nothing is persisted by the API server; an agent
// that is away (or refuses the stream) makes the result "offline", never an error of the PR.
import { request } from "node:http";
import type { Duplex } from "node:stream";
import {
  type DryRunOutcome,
  OFFLINE_MESSAGE,
  type RenderedWorkload,
  type WorkloadDryRunner,
} from "./dry-run.ts";

export interface TunnelDryRunnerOptions {
  /** The tunnel server's openStream, e.g. `(c) => tunnel.openStream(c, { purpose: "kube-api" })`. */
  openStream: (cluster: string) => Promise<Duplex>;
  /** Extra headers for the API server (an impersonation or bearer header, if the agent needs one). */
  headers?: Record<string, string>;
  fieldManager?: string;
  timeoutMs?: number;
}

function resourcePath(workload: RenderedWorkload): string {
  const plural = `${workload.kind.toLowerCase()}s`;
  const group = workload.apiVersion.includes("/")
    ? `/apis/${workload.apiVersion}`
    : `/api/${workload.apiVersion}`;
  return `${group}/namespaces/${encodeURIComponent(workload.metadata.namespace)}/${plural}/${encodeURIComponent(workload.metadata.name)}`;
}

export function createTunnelDryRunner(options: TunnelDryRunnerOptions): WorkloadDryRunner {
  const fieldManager = options.fieldManager ?? "rlark-agent";
  const timeoutMs = options.timeoutMs ?? 30_000;
  return {
    async dryRun(cluster, workload): Promise<DryRunOutcome> {
      let stream: Duplex;
      try {
        stream = await options.openStream(cluster);
      } catch (error) {
        return {
          state: "offline",
          message: `${OFFLINE_MESSAGE} (${error instanceof Error ? error.message : String(error)})`,
        };
      }
      const body = JSON.stringify(workload);
      const query = `dryRun=All&fieldManager=${encodeURIComponent(fieldManager)}&force=true`;
      return new Promise<DryRunOutcome>((resolve) => {
        const req = request(
          {
            method: "PATCH",
            path: `${resourcePath(workload)}?${query}`,
            host: "kubernetes.default.svc",
            createConnection: () => stream as unknown as import("node:net").Socket,
            headers: {
              ...options.headers,
              "content-type": "application/apply-patch+yaml",
              accept: "application/json",
              "content-length": Buffer.byteLength(body),
            },
            timeout: timeoutMs,
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (chunk: Buffer) => chunks.push(chunk));
            res.on("end", () => {
              stream.destroy();
              const status = res.statusCode ?? 0;
              if (status >= 200 && status < 300) return resolve({ state: "passed" });
              let message = `HTTP ${status}`;
              try {
                const parsed = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { message?: unknown };
                if (typeof parsed.message === "string") message = parsed.message;
              } catch {
                // Not a Status object: keep the HTTP status.
              }
              resolve({ state: "failed", message });
            });
            res.on("error", () => resolve({ state: "offline", message: `${OFFLINE_MESSAGE} (stream lost)` }));
          },
        );
        req.on("timeout", () => req.destroy(new Error("timed out")));
        req.on("error", (error) => {
          stream.destroy();
          resolve({ state: "offline", message: `${OFFLINE_MESSAGE} (${error.message})` });
        });
        req.end(body);
      });
    },
  };
}
