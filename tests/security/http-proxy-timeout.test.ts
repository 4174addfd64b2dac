// issue 31: a pod that accepts a proxied request and never answers. The hub's proxy gives up after
// its response timeout with 504 Gateway Timeout, saying so, instead of a 502 "socket hang up".
import t from "tap";
import { freePort } from "../helpers/free-port.ts";
import { serverPodOnHub } from "../helpers/process-pod-on-hub.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

// Accepts every connection, reads nothing, answers nothing, closes nothing.
const silentServer = (port: number) => `
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", ${port}))
s.listen(64)
held = []
while True:
    c, _ = s.accept()
    held.append(c)
`;

t.test("a pod that never answers gives 504 naming the timeout", async (t) => {
  const port = await freePort();
  const { hub, pod: running } = await serverPodOnHub(t, "mute", ["python3", "-c", silentServer(port)], {
    proxyResponseTimeoutMs: 1500,
  });
  const pod = running.metadata.name;
  const headers = { authorization: `Bearer ${hub.adminToken}` };
  for (const [what, url] of [
    ["pod", `${hub.url}/api/v1/namespaces/agent-local/pods/${pod}/proxy/${port}/anything`],
    ["task", `${hub.url}/api/v1/namespaces/agent-local/tasks/mute-main/proxy/${port}/anything`],
  ] as const) {
    // Until the pod listens the agent refuses the port (502); then the pod holds the request.
    const answer = await waitFor(
      `the ${what} proxy timing out`,
      async () => {
        const response = await fetch(url, { headers });
        const body = (await response.json()) as { reason?: string; message?: string };
        return response.status === 502 && /does not listen/.test(body.message ?? "")
          ? undefined
          : { status: response.status, body };
      },
      onRealServers,
    );
    t.equal(answer.status, 504, `the ${what} proxy answers 504`);
    t.equal(answer.body.reason, "GatewayTimeout");
    t.match(answer.body.message, /did not answer within 1\.5 s/, "the body says the pod timed out");
  }
});
