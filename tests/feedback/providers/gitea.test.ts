// Gitea and Forgejo ship no machine-readable API description on npm, so this stand-in keeps to
// the shapes Gitea documents for the calls we make (statuses, issue comments, reviews, pulls) and
// checks the places where Gitea differs from GitHub: /api/v1, `limit` paging, `new_position`.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import t, { type Test } from "tap";
import { createGiteaProvider } from "../../../operators/feedback/providers/index.ts";

interface Seen {
  method: string;
  path: string;
  query: Record<string, string>;
  body: Record<string, unknown> | undefined;
  authorization: string | undefined;
}

async function giteaStandIn(t: Test) {
  const seen: Seen[] = [];
  const comments = Array.from({ length: 60 }, (_, i) => ({ id: i + 1, body: `c${i}` }));
  let failures = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://gitea.invalid");
      const text = Buffer.concat(chunks).toString();
      seen.push({
        method: req.method ?? "",
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined,
        authorization: req.headers.authorization,
      });
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      if (failures > 0) {
        failures--;
        return send(502, { message: "bad gateway" });
      }
      const p = url.pathname;
      if (req.method === "POST" && /\/statuses\/[0-9a-f]{40}$/.test(p))
        return send(201, { id: 1, status: "success" });
      if (req.method === "GET" && p.endsWith("/issues/5/comments")) {
        const page = Number(url.searchParams.get("page"));
        const limit = Number(url.searchParams.get("limit"));
        return send(200, comments.slice((page - 1) * limit, page * limit));
      }
      if (req.method === "POST" && p.endsWith("/issues/5/comments"))
        return send(201, { id: 99, body: "new" });
      if (req.method === "PATCH" && p.endsWith("/issues/comments/7"))
        return send(200, { id: 7, body: "edited" });
      if (req.method === "POST" && p.endsWith("/pulls/5/reviews")) return send(200, { id: 3 });
      if (req.method === "GET" && p.endsWith("/pulls")) {
        return send(200, [
          {
            number: 5,
            head: { sha: "d".repeat(40), ref: "feature", repo: { full_name: "acme/fleet" } },
            base: { ref: "main", repo: { full_name: "acme/fleet" } },
          },
        ]);
      }
      send(404, { message: `no route ${req.method} ${p}` });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`,
    seen,
    failNext(n: number) {
      failures = n;
    },
  };
}

const repo = { owner: "acme", repo: "fleet" };

t.test("the Gitea provider speaks Gitea's API where it differs from GitHub's", async (t) => {
  const gitea = await giteaStandIn(t);
  const provider = createGiteaProvider({ baseUrl: gitea.url, token: "gitea-token", retryBaseMs: 1 });
  t.equal(provider.kind, "gitea");
  t.equal(provider.checkRuns, false, "Gitea has no check runs");

  gitea.failNext(1);
  await provider.setCommitStatus(repo, "e".repeat(40), {
    context: "rlark/sync (prod)",
    state: "success",
    description: "applied",
    targetUrl: "https://rlark.example.test/",
  });
  const status = gitea.seen.filter((s) => s.path.endsWith(`/statuses/${"e".repeat(40)}`));
  t.equal(status.length, 2, "a 502 is retried");
  t.equal(status[1]?.path, `/api/v1/repos/acme/fleet/statuses/${"e".repeat(40)}`);
  t.same(status[1]?.body, {
    state: "success",
    context: "rlark/sync (prod)",
    description: "applied",
    target_url: "https://rlark.example.test/",
  });
  t.equal(status[1]?.authorization, "token gitea-token");

  const comments = await provider.listComments(repo, 5);
  t.equal(comments.length, 60);
  const pages = gitea.seen.filter((s) => s.method === "GET" && s.path.endsWith("/comments"));
  t.same(
    pages.map((p) => p.query),
    [
      { page: "1", limit: "50" },
      { page: "2", limit: "50" },
    ],
    "Gitea pages with limit",
  );

  t.same(await provider.createComment(repo, 5, "hello"), { id: 99, body: "new" });
  await provider.updateComment(repo, 7, "edited");
  t.ok(
    gitea.seen.some((s) => s.method === "PATCH" && s.path === "/api/v1/repos/acme/fleet/issues/comments/7"),
  );

  await provider.publishFindings(repo, 5, "f".repeat(40), {
    name: "rlark/plan",
    summary: "invalid",
    findings: [{ path: "jobs/a.yaml", line: 7, level: "failure", message: "unknown field", title: "Job a" }],
    conclusion: "failure",
  });
  const review = gitea.seen.find((s) => s.path.endsWith("/pulls/5/reviews"));
  t.same(review?.body, {
    commit_id: "f".repeat(40),
    event: "COMMENT",
    body: "invalid",
    comments: [{ path: "jobs/a.yaml", new_position: 7, body: "**Job a**: unknown field" }],
  });

  const pulls = await provider.listOpenPullRequests(repo);
  t.same(pulls, [{ number: 5, headSha: "d".repeat(40), headRef: "feature", baseRef: "main", fork: false }]);
  t.same(gitea.seen.find((s) => s.path.endsWith("/pulls"))?.query, { state: "open", page: "1", limit: "50" });
});
