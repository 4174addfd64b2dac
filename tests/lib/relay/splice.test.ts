// splice on real sockets: when one side dies mid-stream (an HTTP/2 stream whose session's socket
// went, as when the hub stops), the other side is closed too, even though its peer keeps writing
// and never ends. Before, the dead side's end was forwarded as a half-close and the other socket
// waited for a FIN its blocked peer never sent: a stream counted active forever, an fd held.
import http2, { type ServerHttp2Stream } from "node:http2";
import net, { type AddressInfo } from "node:net";
import t from "tap";
import { splice } from "../../../operators/lib/relay/index.ts";

const listen = (server: net.Server) =>
  new Promise<number>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)),
  );

t.test("a side that dies mid-stream closes the other, whose peer sends on and never ends", async (t) => {
  // The far peer: reads all it gets (so the stream from the hub flows) and sends on and on; like a
  // pod's program stuck in sendall, it never answers the half-close with its own end.
  const chunk = Buffer.alloc(64 * 1024, 120);
  const far = net.createServer((socket) => {
    socket.on("error", () => {});
    socket.resume();
    const flood = () => {
      while (!socket.destroyed && socket.write(chunk));
    };
    socket.on("drain", flood);
    flood();
  });
  const farPort = await listen(far);
  t.teardown(() => far.close());

  // The hub: opens a stream on the link, floods it, and then its socket is destroyed.
  let hubSocket: net.Socket | undefined;
  const hub = net.createServer((socket) => {
    hubSocket = socket;
    socket.on("error", () => {});
    const session = http2.connect("http://link", { createConnection: () => socket });
    session.on("error", () => {});
    const out = session.request({ ":method": "CONNECT", ":authority": "pod:7000" }, { endStream: false });
    out.on("error", () => {});
    out.on("response", () => {
      const flood = () => {
        while (!out.destroyed && out.write(chunk));
      };
      out.on("drain", flood);
      flood();
    });
  });
  const hubPort = await listen(hub);
  t.teardown(() => hub.close());

  // The nodeserver's end: the link's stream spliced to a socket to the far peer.
  const link = net.connect(hubPort, "127.0.0.1");
  link.on("error", () => {});
  const h2 = http2.createServer();
  h2.on("session", (session) => session.on("error", () => {}));
  const spliced = new Promise<{ stream: ServerHttp2Stream; socket: net.Socket; closed: Promise<void> }>(
    (resolve) => {
      h2.on("stream", (stream) => {
        stream.on("error", () => {});
        stream.respond({ ":status": 200 });
        const socket = net.connect(farPort, "127.0.0.1");
        socket.on("error", () => {});
        const closed = new Promise<void>((done) => splice(stream, socket, undefined, done));
        resolve({ stream, socket, closed });
      });
    },
  );
  link.once("connect", () => h2.emit("connection", link));
  t.teardown(() => link.destroy());

  const { socket, closed } = await spliced;
  // Both directions moving when the hub goes.
  await new Promise((resolve) => setTimeout(resolve, 300));
  hubSocket?.destroy();
  const outcome = await Promise.race([
    closed.then(() => "closed"),
    new Promise((resolve) => setTimeout(() => resolve("still open"), 5_000)),
  ]);
  t.equal(outcome, "closed", "both sides closed (onClose ran)");
  t.ok(socket.destroyed, "the socket to the far peer is gone");
  socket.destroy();
});

t.test("a side that ends and closes cleanly leaves the other to flush what it still writes", async (t) => {
  // The far server answers 8 MB and closes (as python's http.server does); the HTTP/2 client never
  // ends its side: every byte of the answer still reaches it.
  const size = 8 * 1024 * 1024;
  const far = net.createServer((socket) => {
    socket.on("error", () => {});
    socket.resume();
    socket.end(Buffer.alloc(size, 121));
  });
  const farPort = await listen(far);
  t.teardown(() => far.close());
  const h2 = http2.createServer();
  h2.on("stream", (stream) => {
    stream.on("error", () => {});
    stream.respond({ ":status": 200 });
    const socket = net.connect(farPort, "127.0.0.1");
    socket.on("error", () => {});
    splice(stream, socket);
  });
  const h2Port = await listen(h2);
  t.teardown(() => h2.close());
  const session = http2.connect(`http://127.0.0.1:${h2Port}`);
  t.teardown(() => session.destroy());
  const stream = session.request({ ":method": "CONNECT", ":authority": "far:80" }, { endStream: false });
  let got = 0;
  stream.on("data", (chunk: Buffer) => {
    got += chunk.length;
  });
  await new Promise((resolve) => stream.once("end", resolve));
  t.equal(got, size, "the whole answer");
});
