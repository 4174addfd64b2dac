// issue 31, also: the WebSocket entrance compared a page's Origin with the request's own Host
// header, without the scheme. A page on a name pointed at the hub (DNS rebinding) sends a Host
// matching its Origin, and an https page is another origin than the http hub. Origins are now
// compared, scheme included, with the hub's listening address and its --public-url. Real `ws`
// clients against a WebSocket echo pod through the pod proxy; the socket that opens stays open
// past the HTTP port's header, request and keep-alive timeouts.
import { createRequire } from "node:module";
import t from "tap";
import WebSocket from "ws";
import { freePort } from "../helpers/free-port.ts";
import { serverPodOnHub } from "../helpers/process-pod-on-hub.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";
import { openWebSocket } from "../helpers/websocket.ts";

const echoServer = (port: number) => `
const { WebSocketServer } = require(${JSON.stringify(createRequire(import.meta.url).resolve("ws"))});
new WebSocketServer({ host: "127.0.0.1", port: ${port} }).on("connection", (ws) =>
  ws.on("message", (data) => ws.send(String(data))));
`;

const open = (url: string, headers: Record<string, string>) => openWebSocket(url, [], headers);

async function echo(ws: WebSocket, text: string): Promise<string> {
  const reply = new Promise<string>((resolve) => ws.once("message", (data) => resolve(String(data))));
  ws.send(text);
  return reply;
}

t.test("a WebSocket's Origin must be one of the hub's, scheme included", async (t) => {
  const port = await freePort();
  const { hub, pod: running } = await serverPodOnHub(t, "echo", [process.execPath, "-e", echoServer(port)], {
    publicUrls: ["https://rlark.example.com"],
    httpLimits: { headersTimeoutMs: 1000, requestTimeoutMs: 1500, keepAliveTimeoutMs: 500 },
  });
  const pod = running.metadata.name;
  const hubPort = new URL(hub.url).port;
  const url = `${hub.url.replace(/^http/, "ws")}/api/v1/namespaces/agent-local/pods/${pod}/proxy/${port}/`;
  const token = { authorization: `Bearer ${hub.adminToken}` };
  const own = await waitFor(
    "the pod's WebSocket server answering",
    async () => (await open(url, { ...token, origin: new URL(hub.url).origin })).ws,
    onRealServers,
  );
  t.teardown(() => own.terminate());
  t.equal(await echo(own, "one"), "one", "the hub's own origin opens");

  const refused = [
    [
      "a forged Host matching a rebound name's Origin",
      { host: `evil.example:${hubPort}`, origin: `http://evil.example:${hubPort}` },
    ],
    ["an https page on the hub's http address", { origin: `https://127.0.0.1:${hubPort}` }],
    ["another port of the hub's host", { origin: "http://127.0.0.1:1" }],
    [
      "the public name over http (it is https)",
      { host: "rlark.example.com", origin: "http://rlark.example.com" },
    ],
    ["an opaque origin", { origin: "null" }],
  ] as const;
  for (const [what, headers] of refused) {
    const answer = await open(url, { ...token, ...headers });
    t.equal(answer.status, 403, `${what} is refused`);
    t.match(answer.body, /another origin/);
    answer.ws?.terminate();
  }
  for (const [what, headers] of [
    ["localhost on the loopback port", { origin: `http://localhost:${hubPort}` }],
    [
      "the --public-url, as a TLS proxy forwards it",
      { host: "rlark.example.com", origin: "https://rlark.example.com" },
    ],
    ["no Origin (not a browser)", {}],
  ] as const) {
    const answer = await open(url, { ...token, ...headers });
    t.ok(answer.ws, `${what} opens`);
    if (answer.ws) t.equal(await echo(answer.ws, what), what);
    answer.ws?.terminate();
  }

  // Longer than the three HTTP timeouts together: a socket they cut would be closed by now.
  await new Promise((resolve) => setTimeout(resolve, 4000));
  t.equal(own.readyState, WebSocket.OPEN, "the first socket is still open");
  t.equal(await echo(own, "two"), "two", "and still carries messages");
});
