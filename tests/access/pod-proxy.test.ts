// The pod proxy end to end: a real HTTP server (Python's http.server) as a process-runtime pod,
// reached through the hub's /api/v1/namespaces/<ns>/pods/<pod>/proxy/<port>/…, its SSH tunnel
// and an in-process agent. Paths, queries, bodies, redirects; the hub's credentials and
// hop-by-hop headers stay behind; a port the pod does not listen on is refused; each request is
// audited.
import t from "tap";
import type { HttpAuditRecord } from "../../operators/access/index.ts";
import { freePort } from "../helpers/free-port.ts";
import { serverPodOnHub } from "../helpers/process-pod-on-hub.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const echoServer = (port: number) => `
import json, http.server
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        if self.path == "/redirect":
            self.send_response(302); self.send_header("Location", "/landed"); self.end_headers(); return
        n = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(n) if n else b""
        out = json.dumps({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body.decode()}).encode()
        self.send_response(200); self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out))); self.send_header("x-pod", "yes"); self.end_headers()
        self.wfile.write(out)
    do_GET = answer
    do_POST = answer
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", ${port}), H).serve_forever()
`;

t.test("HTTP through the hub to a pod's port", async (t) => {
  const port = await freePort();
  const audit: HttpAuditRecord[] = [];
  const { hub, pod: running } = await serverPodOnHub(t, "web", ["python3", "-c", echoServer(port)], {
    audit: (record) => audit.push(record),
  });
  const pod = running.metadata.name;
  const base = `${hub.url}/api/v1/namespaces/agent-local/pods/${pod}/proxy`;
  const headers = {
    authorization: `Bearer ${hub.adminToken}`,
    cookie: "session=the-pods-own; rlark-proxy=a-hub-ticket",
    "x-custom": "kept",
  };

  const answer = await waitFor(
    "the pod's server answering",
    async () => {
      const response = await fetch(`${base}/${port}/some/path?q=1&r=two`, { headers });
      return response.status === 200 ? response : undefined;
    },
    onRealServers,
  );
  t.equal(answer.headers.get("x-pod"), "yes", "the pod's headers come back");
  const echoed = (await answer.json()) as { path: string; headers: Record<string, string> };
  t.equal(echoed.path, "/some/path?q=1&r=two", "path and query reach the pod unchanged");
  t.equal(echoed.headers["x-custom"], "kept");
  t.notOk(
    echoed.headers.Authorization ?? echoed.headers.authorization,
    "the hub's token does not reach the pod",
  );
  t.equal(
    echoed.headers.Cookie ?? echoed.headers.cookie,
    "session=the-pods-own",
    "nor the hub's login cookie; the pod's own cookies pass",
  );
  t.equal(echoed.headers["x-forwarded-prefix"], `/api/v1/namespaces/agent-local/pods/${pod}/proxy/${port}`);

  const posted = await fetch(`${base}/${port}/form`, { method: "POST", headers, body: "a=1&b=2" });
  t.match(await posted.json(), { method: "POST", path: "/form", body: "a=1&b=2" }, "a body is passed on");

  const redirect = await fetch(`${base}/${port}/redirect`, { headers, redirect: "manual" });
  t.equal(redirect.status, 302);
  t.equal(
    redirect.headers.get("location"),
    `/api/v1/namespaces/agent-local/pods/${pod}/proxy/${port}/landed`,
    "a redirect to the pod's root stays under the proxy",
  );

  // The hub's own HTTP port is on the same machine, but not the pod's: refused by the agent.
  const hubPort = new URL(hub.url).port;
  const refused = await fetch(`${base}/${hubPort}/metrics`, { headers });
  t.equal(refused.status, 502);
  t.match(await refused.json(), { message: new RegExp(`does not listen on port ${hubPort}`) });

  t.equal((await fetch(`${base}/${port}/x`)).status, 401, "no token, no proxy");

  // The Task's route reaches its first ready pod; its prefix is the Task's.
  const taskBase = `${hub.url}/api/v1/namespaces/agent-local/tasks/web-main/proxy/${port}`;
  const byTask = await fetch(`${taskBase}/via-task`, { headers });
  t.equal(byTask.status, 200);
  t.match(await byTask.json(), {
    path: "/via-task",
    headers: { "x-forwarded-prefix": `/api/v1/namespaces/agent-local/tasks/web-main/proxy/${port}` },
  });
  const noTask = await fetch(`${hub.url}/api/v1/namespaces/agent-local/tasks/nope/proxy/${port}/`, {
    headers,
  });
  t.equal(noTask.status, 404);

  await waitFor("audit records", () => audit.filter((r) => r.verb === "proxy").length >= 4, onRealServers);
  t.match(
    audit.find((r) => r.detail?.method === "POST"),
    { actor: "admin-token", verb: "proxy", target: { pod, port, job: "web" }, result: "ok", bytesIn: 7 },
  );
  t.match(
    audit.find((r) => r.target.port === Number(hubPort)),
    { result: "error" },
  );
  t.notOk(JSON.stringify(audit).includes("hub-secret"), "no cookies or contents in the audit");
});
