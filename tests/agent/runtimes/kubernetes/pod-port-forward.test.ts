// A forward through pods/portforward keeps every byte of the pod's side when the API server's
// first messages (the port prefix of each channel) arrive together with its 101 answer, as a real
// kubelet's did: ws delivered them before the agent listened, and the forward then cut the first
// two bytes of the pod's data instead ("TP/1.1 200 OK" through ssh -L into a real pod, issue 24).
// Here a server writes the upgrade answer and those messages in one write, so they arrive in one
// read.
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import t from "tap";
import { podPortForward } from "../../../../operators/agent/runtimes/kubernetes/access/pod-port-forward.ts";

/** One unmasked binary WebSocket frame (server to client) of a payload under 64 KiB. */
function frame(payload: Buffer): Buffer {
  const head =
    payload.length < 126
      ? Buffer.from([0x82, payload.length])
      : Buffer.from([0x82, 126, payload.length >> 8, payload.length & 0xff]);
  return Buffer.concat([head, payload]);
}

const PORT_8080 = Buffer.from([8080 & 0xff, 8080 >> 8]);
const channel = (n: number, data: Buffer) => frame(Buffer.concat([Buffer.from([n]), data]));

t.test("the pod's first bytes survive a port prefix that came with the 101", async (t) => {
  const body = Buffer.from("HTTP/1.1 200 OK\r\n\r\nevery byte of it");
  const server = createServer();
  server.on("upgrade", (request: IncomingMessage, socket: Socket) => {
    const key = request.headers["sec-websocket-key"] ?? "";
    const accept = createHash("sha1").update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
    // the answer, both channels' port prefixes, the pod's data and the close, in one write: one read
    socket.end(
      Buffer.concat([
        Buffer.from(
          "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
            `Sec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n`,
        ),
        channel(0, PORT_8080),
        channel(1, PORT_8080),
        channel(0, body),
        Buffer.from([0x88, 2, 0x03, 0xe8]), // close, 1000
      ]),
    );
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: "c",
        server: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
        // plain http: client-node asks for this to allow it
        skipTLSVerify: true,
      },
    ],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  const forward = await podPortForward(kc, { namespace: "ns", name: "pod" }, 8080);
  const chunks: Buffer[] = [];
  for await (const chunk of forward) chunks.push(chunk as Buffer);
  t.equal(Buffer.concat(chunks).toString(), body.toString(), "the whole of the pod's side");
});
