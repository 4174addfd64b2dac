// A local stand-in for the GitHub REST endpoints feedback calls. Every response body it sends,
// and every request body it receives, is checked against GitHub's published OpenAPI description
// (@octokit/openapi): a response the real API could not give, or a request it would not accept,
// is recorded as a violation (and answered 500), so the stand-in cannot drift from GitHub.
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";

const require = createRequire(import.meta.url);
type Json = Record<string, unknown>;

interface OpenApi {
  paths: Record<string, Record<string, Json>>;
  components: Json & { examples: Record<string, { value: unknown }> };
}

let cached: { doc: OpenApi; ajv: Ajv; validators: Map<string, ValidateFunction> } | undefined;

function openApi() {
  if (!cached) {
    const doc = JSON.parse(
      readFileSync(require.resolve("@octokit/openapi/generated/api.github.com.json"), "utf8"),
    ) as OpenApi;
    const ajv = new Ajv({ strict: false, allErrors: true });
    (addFormatsModule as unknown as (a: Ajv) => void)(ajv);
    cached = { doc, ajv, validators: new Map() };
  }
  return cached;
}

function operation(path: string, method: string): Json {
  const op = openApi().doc.paths[path]?.[method];
  if (!op) throw new Error(`${method.toUpperCase()} ${path} is not in GitHub's OpenAPI description`);
  return op;
}

function validator(key: string, schema: unknown): ValidateFunction {
  const api = openApi();
  let v = api.validators.get(key);
  if (!v) {
    v = api.ajv.compile({ ...(schema as Json), components: api.doc.components });
    api.validators.set(key, v);
  }
  return v;
}

function jsonContent(holder: unknown): {
  schema: unknown;
  examples?: Record<string, { $ref?: string; value?: unknown }>;
} {
  const content = (holder as { content?: Record<string, unknown> })?.content?.["application/json"];
  if (!content) throw new Error("no application/json content");
  return content as { schema: unknown; examples?: Record<string, { $ref?: string; value?: unknown }> };
}

/** The documented example response of an operation: a body GitHub's own description says it sends. */
export function exampleResponse(path: string, method: string, status: string): Json {
  const content = jsonContent((operation(path, method).responses as Json)[status]);
  let example = Object.values(content.examples ?? {})[0];
  if (example?.$ref) example = openApi().doc.components.examples[example.$ref.split("/").pop() as string];
  return structuredClone(example?.value) as Json;
}

export function checkResponse(path: string, method: string, status: string, body: unknown): string[] {
  const content = jsonContent((operation(path, method).responses as Json)[status]);
  const v = validator(`res ${method} ${path} ${status}`, content.schema);
  return v(body) ? [] : (v.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`);
}

export function checkRequest(path: string, method: string, body: unknown): string[] {
  const requestBody = operation(path, method).requestBody as { required?: boolean } | undefined;
  if (!requestBody) return [];
  if (body === undefined) return requestBody.required ? ["the request body is required"] : [];
  const v = validator(`req ${method} ${path}`, jsonContent(requestBody).schema);
  return v(body) ? [] : (v.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`);
}

export interface RecordedRequest {
  method: string;
  /** The operation's path template, e.g. /repos/{owner}/{repo}/statuses/{sha}. */
  operation: string;
  url: string;
  body: Json | undefined;
  authorization: string | undefined;
}

export interface StoredStatus {
  sha: string;
  state: string;
  context: string;
  description: string;
  targetUrl: string | undefined;
}

export interface StandInPull {
  number: number;
  headSha: string;
  headRef: string;
  baseRef: string;
  /** full_name of the head repository; the base one unless a fork. */
  headRepo?: string;
}

interface Route {
  /** Outside /repos/{owner}/{repo}: App endpoints. */
  global?: boolean;
  method: string;
  template: string;
  pattern: RegExp;
  status: string;
  handle: (params: string[], body: Json | undefined) => unknown;
}

export interface GitHubStandIn {
  /** API root to hand to the provider, e.g. http://127.0.0.1:PORT */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Responses or requests that break GitHub's OpenAPI description. Must stay empty. */
  readonly violations: string[];
  readonly statuses: StoredStatus[];
  readonly comments: Map<number, { id: number; issue: number; body: string }>;
  readonly reviews: { pull: number; body: Json }[];
  readonly checkRuns: Json[];
  pulls: StandInPull[];
  /** What the installation-token endpoint hands out to a GitHub App. */
  installationToken: string;
  /** The next `times` requests matching method and operation template answer `status` (e.g. 502). */
  fail(method: string, template: string, status: number, times?: number): void;
  /** The host is back: no more injected failures. */
  clearFaults(): void;
  /** Latest status per context for a sha. */
  status(sha: string, context: string): StoredStatus | undefined;
  close(): Promise<void>;
}

export async function startGitHubStandIn(options: { owner: string; repo: string }): Promise<GitHubStandIn> {
  const base = `/repos/${options.owner}/${options.repo}`;
  const requests: RecordedRequest[] = [];
  const violations: string[] = [];
  const statuses: StoredStatus[] = [];
  const comments = new Map<number, { id: number; issue: number; body: string }>();
  const reviews: { pull: number; body: Json }[] = [];
  const checkRuns: Json[] = [];
  const faults: { method: string; template: string; status: number; times: number }[] = [];
  let nextId = 1000;
  let url = "";

  const commentObject = (c: { id: number; issue: number; body: string }) => {
    const example = exampleResponse("/repos/{owner}/{repo}/issues/{issue_number}/comments", "post", "201");
    return {
      ...example,
      id: c.id,
      body: c.body,
      url: `${url}${base}/issues/comments/${c.id}`,
      issue_url: `${url}${base}/issues/${c.issue}`,
    };
  };

  const routes: Route[] = [
    {
      global: true,
      method: "POST",
      template: "/app/installations/{installation_id}/access_tokens",
      pattern: /^\/app\/installations\/(\d+)\/access_tokens$/,
      status: "201",
      handle: () => {
        const example = exampleResponse("/app/installations/{installation_id}/access_tokens", "post", "201");
        return {
          ...example,
          token: standIn.installationToken,
          expires_at: new Date(Date.now() + 3_600_000).toISOString(),
        };
      },
    },
    {
      method: "POST",
      template: "/repos/{owner}/{repo}/statuses/{sha}",
      pattern: /^\/repos\/[^/]+\/[^/]+\/statuses\/([0-9a-f]{40})$/,
      status: "201",
      handle: ([sha], body) => {
        const stored: StoredStatus = {
          sha: sha as string,
          state: String(body?.state),
          context: String(body?.context ?? "default"),
          description: String(body?.description ?? ""),
          targetUrl: typeof body?.target_url === "string" ? body.target_url : undefined,
        };
        statuses.push(stored);
        const example = exampleResponse("/repos/{owner}/{repo}/statuses/{sha}", "post", "201");
        return {
          ...example,
          id: nextId++,
          state: stored.state,
          context: stored.context,
          description: stored.description || null,
          target_url: stored.targetUrl ?? null,
        };
      },
    },
    {
      method: "GET",
      template: "/repos/{owner}/{repo}/issues/{issue_number}/comments",
      pattern: /^\/repos\/[^/]+\/[^/]+\/issues\/(\d+)\/comments$/,
      status: "200",
      handle: ([issue], _body, query?: URLSearchParams) => {
        const all = [...comments.values()].filter((c) => c.issue === Number(issue));
        const perPage = Number(query?.get("per_page") ?? 30);
        const page = Number(query?.get("page") ?? 1);
        return all.slice((page - 1) * perPage, page * perPage).map(commentObject);
      },
    },
    {
      method: "POST",
      template: "/repos/{owner}/{repo}/issues/{issue_number}/comments",
      pattern: /^\/repos\/[^/]+\/[^/]+\/issues\/(\d+)\/comments$/,
      status: "201",
      handle: ([issue], body) => {
        const c = { id: nextId++, issue: Number(issue), body: String(body?.body) };
        comments.set(c.id, c);
        return commentObject(c);
      },
    },
    {
      method: "PATCH",
      template: "/repos/{owner}/{repo}/issues/comments/{comment_id}",
      pattern: /^\/repos\/[^/]+\/[^/]+\/issues\/comments\/(\d+)$/,
      status: "200",
      handle: ([id], body) => {
        const c = comments.get(Number(id));
        if (!c) throw new Error(`no comment ${id}`);
        c.body = String(body?.body);
        return commentObject(c);
      },
    },
    {
      method: "POST",
      template: "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
      pattern: /^\/repos\/[^/]+\/[^/]+\/pulls\/(\d+)\/reviews$/,
      status: "200",
      handle: ([pull], body) => {
        reviews.push({ pull: Number(pull), body: body ?? {} });
        const example = exampleResponse("/repos/{owner}/{repo}/pulls/{pull_number}/reviews", "post", "200");
        return {
          ...example,
          id: nextId++,
          body: String(body?.body ?? ""),
          commit_id: String(body?.commit_id ?? ""),
        };
      },
    },
    {
      method: "POST",
      template: "/repos/{owner}/{repo}/check-runs",
      pattern: /^\/repos\/[^/]+\/[^/]+\/check-runs$/,
      status: "201",
      handle: (_params, body) => {
        checkRuns.push(body ?? {});
        const example = exampleResponse("/repos/{owner}/{repo}/check-runs", "post", "201");
        return { ...example, id: nextId++, name: String(body?.name), head_sha: String(body?.head_sha) };
      },
    },
    {
      method: "PATCH",
      template: "/repos/{owner}/{repo}/check-runs/{check_run_id}",
      pattern: /^\/repos\/[^/]+\/[^/]+\/check-runs\/(\d+)$/,
      status: "200",
      handle: ([id], body) => {
        checkRuns.push({ ...(body ?? {}), updates: Number(id) });
        const example = exampleResponse("/repos/{owner}/{repo}/check-runs/{check_run_id}", "patch", "200");
        return { ...example, id: Number(id) };
      },
    },
    {
      method: "GET",
      template: "/repos/{owner}/{repo}/pulls",
      pattern: /^\/repos\/[^/]+\/[^/]+\/pulls$/,
      status: "200",
      handle: () => {
        const [example] = exampleResponse("/repos/{owner}/{repo}/pulls", "get", "200") as unknown as Json[];
        return standIn.pulls.map((p) => {
          const item = structuredClone(example) as Json & {
            head: Json & { repo: Json };
            base: Json & { repo: Json };
          };
          // The published example lists a team without its required `type`; GitHub sends it.
          item.requested_teams = [];
          item.number = p.number;
          item.head = {
            ...item.head,
            sha: p.headSha,
            ref: p.headRef,
            repo: { ...item.head.repo, full_name: p.headRepo ?? `${options.owner}/${options.repo}` },
          };
          item.base = {
            ...item.base,
            ref: p.baseRef,
            repo: { ...item.base.repo, full_name: `${options.owner}/${options.repo}` },
          };
          return item;
        });
      },
    },
  ];

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const parsed = new URL(req.url ?? "/", "http://stand-in.invalid");
      const method = req.method ?? "GET";
      const route = routes.find((r) => r.method === method && r.pattern.test(parsed.pathname));
      const text = Buffer.concat(chunks).toString("utf8");
      let body: Json | undefined;
      try {
        body = text ? (JSON.parse(text) as Json) : undefined;
      } catch {
        body = undefined;
      }
      const send = (status: number, payload: unknown) => {
        const data = JSON.stringify(payload);
        res.writeHead(status, {
          "content-type": "application/json; charset=utf-8",
          "content-length": Buffer.byteLength(data),
        });
        res.end(data);
      };
      if (!route || (!route.global && !parsed.pathname.startsWith(base))) {
        violations.push(`unexpected request ${method} ${parsed.pathname}`);
        return send(404, { message: "Not Found", documentation_url: "https://docs.github.com/rest" });
      }
      requests.push({
        method,
        operation: route.template,
        url: req.url ?? "",
        body,
        authorization: req.headers.authorization,
      });
      const fault = faults.find((f) => f.method === method && f.template === route.template && f.times > 0);
      if (fault) {
        fault.times--;
        // An edge failure: not an API response, so there is no schema to hold it to.
        res.writeHead(fault.status, { "content-type": "text/html" });
        res.end("<html><body>Bad gateway</body></html>");
        return;
      }
      const lower = route.method.toLowerCase();
      for (const problem of checkRequest(route.template, lower, body))
        violations.push(`request ${method} ${route.template}: ${problem}`);
      let payload: unknown;
      try {
        payload = (route.handle as (p: string[], b: Json | undefined, q: URLSearchParams) => unknown)(
          (route.pattern.exec(parsed.pathname) ?? []).slice(1),
          body,
          parsed.searchParams,
        );
      } catch (error) {
        violations.push(`handler ${method} ${route.template}: ${(error as Error).message}`);
        return send(500, { message: "stand-in failure" });
      }
      const problems = checkResponse(route.template, lower, route.status, payload);
      if (problems.length > 0) {
        violations.push(...problems.map((p) => `response ${method} ${route.template}: ${p}`));
        return send(500, { message: "stand-in response breaks the OpenAPI description" });
      }
      send(Number(route.status), payload);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const standIn: GitHubStandIn = {
    url,
    requests,
    violations,
    statuses,
    comments,
    reviews,
    checkRuns,
    pulls: [],
    installationToken: "ghs_installation0123456789",
    fail(method, template, status, times = 1) {
      faults.push({ method, template, status, times });
    },
    clearFaults() {
      faults.length = 0;
    },
    status(sha, context) {
      return statuses.filter((s) => s.sha === sha && s.context === context).at(-1);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return standIn;
}
