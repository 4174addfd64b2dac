// JSON over HTTP(S) to a kube-apiserver with the credentials of a KubeConfig: one keep-alive
// agent, bounded response bodies, and a line-delimited stream for watches. The generated
// client-node APIs would need one method per scope and verb; the store only needs paths.

import http, { type IncomingHttpHeaders } from "node:http";
import https from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";

/** Largest response body read whole (a page of a list is bounded by `limit`). */
const MAX_BODY = 64 * 1024 * 1024;
/** Largest single watch event line. */
const MAX_LINE = 8 * 1024 * 1024;

export interface KubeStatus {
  kind?: string;
  code?: number;
  reason?: string;
  message?: string;
}

/** A non-2xx answer of the apiserver, with its Status body when it sent one. */
export class KubeHttpError extends Error {
  readonly code: number;
  readonly reason: string;
  /** The Retry-After the apiserver sent with it (429, 503), in milliseconds. */
  retryAfterMs?: number;

  constructor(code: number, status: KubeStatus | undefined, fallback: string) {
    super(status?.message ?? fallback);
    this.name = "KubeHttpError";
    this.code = code;
    this.reason = status?.reason ?? "";
  }
}

/** Sends of one request that the apiserver answered 429 before that is the answer. */
const MAX_ATTEMPTS_ON_429 = 5;

/**
 * `send()` again while the apiserver answers 429 (not processed: its "storage is
 * (re)initializing" or priority and fairness), after the Retry-After it names, as client-go does.
 */
async function resendOn429<T>(send: () => Promise<T>, deadline = Number.POSITIVE_INFINITY): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (error) {
      if (!(error instanceof KubeHttpError) || error.code !== 429 || attempt >= MAX_ATTEMPTS_ON_429)
        throw error;
      const pause = Math.min(error.retryAfterMs ?? 1000, 5000);
      // No time left for another send within the caller's timeout: the 429 is the answer.
      if (Date.now() + pause >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/** A KubeHttpError for a non-2xx answer, with the Retry-After its headers name. */
function answerError(
  code: number,
  status: KubeStatus | undefined,
  fallback: string,
  headers: IncomingHttpHeaders,
): KubeHttpError {
  const error = new KubeHttpError(code, status, fallback);
  const retryAfter = Number(headers["retry-after"]);
  if (Number.isFinite(retryAfter) && retryAfter >= 0) error.retryAfterMs = retryAfter * 1000;
  return error;
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  contentType?: string;
  /**
   * Abort (reject) when the whole answer has not come within this long, 429 resends included (a
   * caller with a deadline, such as a Lease renewal, must not wait five Retry-Afters). Default: no
   * limit.
   */
  timeoutMs?: number;
}

export interface KubeHttpOptions {
  kubeConfig: KubeConfig;
  /** Concurrent connections to the apiserver. Default 32. */
  maxSockets?: number;
}

export class KubeHttp {
  readonly server: URL;
  /** Requests sent, by verb (WATCH for a watch stream), 429 resends included: for benchmarks and tests. */
  readonly sent: Record<string, number> = {};
  #kc: KubeConfig;
  #agent: http.Agent;
  #transport: typeof http | typeof https;

  constructor(options: KubeHttpOptions) {
    const cluster = options.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error("the kubeconfig has no current cluster");
    this.server = new URL(cluster.server);
    this.#kc = options.kubeConfig;
    const tls = this.server.protocol === "https:";
    this.#transport = tls ? https : http;
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 32 };
    this.#agent = tls ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
  }

  async #options(method: string, path: string, query: Query): Promise<https.RequestOptions> {
    const url = new URL(this.server.href.replace(/\/$/, "") + path);
    for (const [key, value] of Object.entries(query)) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const options: https.RequestOptions = {
      method,
      hostname: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      headers: { accept: "application/json" },
    };
    await this.#kc.applyToHTTPSOptions(options);
    options.agent = this.#agent;
    return options;
  }

  /**
   * The parsed JSON answer; a non-2xx status rejects with KubeHttpError. A 429 (the apiserver's
   * "storage is (re)initializing" for a resource whose cache is being built, or its priority and
   * fairness) was not processed, so it is sent again after the Retry-After it names, as client-go
   * does, a few times before it is an error.
   */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const timeoutMs = options.timeoutMs;
    if (timeoutMs === undefined) return resendOn429(() => this.#requestOnce<T>(method, path, options));
    const deadline = Date.now() + timeoutMs;
    return resendOn429(() => this.#requestOnce<T>(method, path, options, deadline), deadline);
  }

  /** One send; with `deadline` (ms since the epoch) it is aborted then, `options.timeoutMs` named. */
  async #requestOnce<T>(
    method: string,
    path: string,
    options: RequestOptions,
    deadline?: number,
  ): Promise<T> {
    this.#count(method);
    const request = await this.#options(method, path, options.query ?? {});
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    if (payload !== undefined) {
      request.headers = {
        ...request.headers,
        "content-type": options.contentType ?? "application/json",
        "content-length": Buffer.byteLength(payload),
      };
    }
    return new Promise<T>((resolve, reject) => {
      const req = this.#transport.request(request, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_BODY) {
            req.destroy(new Error(`${method} ${path}: response larger than ${MAX_BODY} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on("error", reject);
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let json: unknown;
          try {
            json = text === "" ? undefined : JSON.parse(text);
          } catch {
            json = undefined;
          }
          const code = res.statusCode ?? 0;
          if (code >= 200 && code < 300) resolve(json as T);
          else {
            reject(
              answerError(
                code,
                json as KubeStatus | undefined,
                `${method} ${path}: HTTP ${code}`,
                res.headers,
              ),
            );
          }
        });
      });
      req.on("error", reject);
      if (deadline !== undefined) {
        const timer = setTimeout(
          () => req.destroy(new Error(`${method} ${path}: no answer within ${options.timeoutMs} ms`)),
          Math.max(0, deadline - Date.now()),
        );
        req.on("close", () => clearTimeout(timer));
      }
      req.end(payload);
    });
  }

  /**
   * A watch stream: `onLine` gets each parsed event. Resolves with a stop function once the
   * apiserver answered 200; `done` is called once when the stream ends (error or not).
   */
  async stream(
    path: string,
    query: Query,
    onLine: (value: unknown) => void,
    done: (error: Error | undefined) => void,
  ): Promise<() => void> {
    // A 429 comes before any event (a watch of a resource whose cache is being built): as request().
    return resendOn429(() => this.#streamOnce(path, query, onLine, done));
  }

  async #streamOnce(
    path: string,
    query: Query,
    onLine: (value: unknown) => void,
    done: (error: Error | undefined) => void,
  ): Promise<() => void> {
    // A watch holds its connection for minutes: it must not take a keep-alive socket that
    // requests need, so it gets one of its own.
    this.#count("WATCH");
    const request = { ...(await this.#options("GET", path, query)), agent: false as const };
    return new Promise((resolve, reject) => {
      let ended = false;
      const end = (error: Error | undefined) => {
        if (ended) return;
        ended = true;
        done(error);
      };
      const req = this.#transport.request(request, (res) => {
        const code = res.statusCode ?? 0;
        if (code !== 200) {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.length < 64 && chunks.push(c));
          res.on("end", () => {
            let status: KubeStatus | undefined;
            try {
              status = JSON.parse(Buffer.concat(chunks).toString("utf8")) as KubeStatus;
            } catch {}
            reject(answerError(code, status, `watch ${path}: HTTP ${code}`, res.headers));
          });
          return;
        }
        resolve(() => {
          ended = true;
          req.destroy();
        });
        let buffered = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          buffered += chunk;
          let newline = buffered.indexOf("\n");
          while (newline >= 0 && !ended) {
            const line = buffered.slice(0, newline);
            buffered = buffered.slice(newline + 1);
            if (line.trim() !== "") {
              try {
                onLine(JSON.parse(line));
              } catch (error) {
                end(error instanceof Error ? error : new Error(String(error)));
                req.destroy();
                return;
              }
            }
            newline = buffered.indexOf("\n");
          }
          if (buffered.length > MAX_LINE) {
            end(new Error(`watch ${path}: an event longer than ${MAX_LINE} bytes`));
            req.destroy();
          }
        });
        res.on("error", (error) => end(error));
        res.on("end", () => end(undefined));
        res.on("close", () => end(undefined));
      });
      req.on("error", (error) => {
        end(error);
        reject(error);
      });
      req.end();
    });
  }

  #count(verb: string): void {
    this.sent[verb] = (this.sent[verb] ?? 0) + 1;
  }

  close(): void {
    this.#agent.destroy();
  }
}
