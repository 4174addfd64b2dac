// WebSockets through the pod and task proxies: a real WebSocket echo server (the `ws` package,
// run by Node) as a process-runtime pod, reached through the hub's upgrade entrance, its SSH
// tunnel and an in-process agent. Text and binary messages, the path and query, the pod's choice
// of subprotocol, the task route, refusals before the upgrade, and one audit record.
import { createRequire } from "node:module";
import t from "tap";
import WebSocket from "ws";
import type { HttpAuditRecord } from "../../operators/access/index.ts";
import { freePort } from "../helpers/free-port.ts";
import { serverPodOnHub } from "../helpers/process-pod-on-hub.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

/** Echoes every message with the path it was opened on; picks the subprotocol "echo.v2" when offered. */
const echoServer = (port: number) => `
const { WebSocketServer } = require(${JSON.stringify(createRequire(import.meta.url).resolve("ws"))});
const server = new WebSocketServer({ host: "127.0.0.1", port: ${port},
  handleProtocols: (protocols) => (protocols.has("echo.v2") ? "echo.v2" : false) });
server.on("connection", (ws, req) => {
  ws.on("message", (data, isBinary) => {
    if (isBinary) ws.send(data, { binary: true });
    else ws.send(JSON.stringify({ path: req.url, text: data.toString(), prefix: req.headers["x-forwarded-prefix"],
      authorization: req.headers.authorization ?? null }));
  });
});
`;

function open(url: string, protocols: string[], headers: Record<string, string>) {
  return new Promise<{ ws?: WebSocket; status?: number }>((resolve) => {
    const ws = new WebSocket(url, protocols, { headers });
    ws.once("open", () => resolve({ ws }));
    ws.once("unexpected-response", (_req, res) => resolve({ status: res.statusCode }));
    ws.once("error", () => resolve({}));
  });
}

const next = (ws: WebSocket) =>
  new Promise<{ data: Buffer; binary: boolean }>((resolve) =>
    ws.once("message", (data: Buffer, binary: boolean) => resolve({ data, binary })),
  );

t.test("WebSockets through the hub to a pod's port", async (t) => {
  const port = await freePort();
  const audit: HttpAuditRecord[] = [];
  const { hub, pod } = await serverPodOnHub(t, "echo", [process.execPath, "-e", echoServer(port)], {
    audit: (record) => audit.push(record),
  });
  const ws = hub.url.replace(/^http/, "ws");
  const podUrl = `${ws}/api/v1/namespaces/agent-local/pods/${pod.metadata.name}/proxy/${port}`;
  const auth = { authorization: `Bearer ${hub.adminToken}` };

  const opened = await waitFor(
    "the pod's WebSocket server answering",
    async () => (await open(`${podUrl}/live/feed?x=1`, ["echo.v2", "other"], auth)).ws,
    onRealServers,
  );
  t.teardown(() => opened.terminate());
  t.equal(opened.protocol, "echo.v2", "the pod's choice of subprotocol reaches the client");
  let reply = next(opened);
  opened.send("hello");
  const echoed = JSON.parse((await reply).data.toString()) as Record<string, unknown>;
  t.match(echoed, {
    path: "/live/feed?x=1",
    text: "hello",
    prefix: `/api/v1/namespaces/agent-local/pods/${pod.metadata.name}/proxy/${port}`,
    authorization: null,
  });
  t.equal(echoed.authorization, null, "the hub's token stays behind");
  reply = next(opened);
  const bytes = Buffer.from([0, 1, 2, 255, 254]);
  opened.send(bytes, { binary: true });
  const back = await reply;
  t.ok(back.binary && back.data.equals(bytes), "binary messages come back whole");
  const closed = new Promise((resolve) => opened.once("close", resolve));
  opened.close(1000, "bye");
  await closed;
  const record = await waitFor(
    "the audit record",
    // (The attempts before the pod listened are audited as errors.)
    () => audit.find((r) => r.detail?.websocket === true && r.result === "ok"),
    onRealServers,
  );
  t.match(record, { verb: "proxy", result: "ok", actor: "admin-token" });
  t.ok(record.bytesIn >= 10 && record.bytesOut >= 10, "bytes counted both ways");

  await t.test("the task route reaches the task's ready pod", async (t) => {
    const task = (pod.spec as { task?: string }).task as string;
    const viaTask = await open(`${ws}/api/v1/namespaces/agent-local/tasks/${task}/proxy/${port}/t`, [], auth);
    t.ok(viaTask.ws, "open");
    const answer = next(viaTask.ws as WebSocket);
    viaTask.ws?.send("via task");
    t.match(JSON.parse((await answer).data.toString()), { path: "/t", text: "via task" });
    viaTask.ws?.terminate();
  });

  await t.test("refused before the upgrade", async (t) => {
    t.match(await open(`${podUrl}/`, [], {}), { status: 401 }, "no token");
    t.match(
      await open(`${podUrl}/`, [], { ...auth, origin: "http://evil.example" }),
      { status: 403 },
      "another origin",
    );
    const closedPort = await freePort();
    t.match(
      await open(
        `${ws}/api/v1/namespaces/agent-local/pods/${pod.metadata.name}/proxy/${closedPort}/`,
        [],
        auth,
      ),
      { status: 502 },
      "a port the pod does not listen on",
    );
  });
});
