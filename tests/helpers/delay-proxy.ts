// A TCP proxy that holds every chunk `delayMs` before passing it on, in both directions: one
// path's injected latency (what netem's delay does to packets, done to a stream in user space), for
// tests of what measures it. Order is kept (equal delays fire in order); closed at teardown.
import net, { type AddressInfo } from "node:net";
import type { Test } from "tap";

export async function delayProxy(t: Test, upstream: string, delayMs: number): Promise<string> {
  const at = upstream.lastIndexOf(":");
  const [host, port] = [upstream.slice(0, at), Number(upstream.slice(at + 1))];
  const sockets = new Set<net.Socket>();
  const later = (from: net.Socket, to: net.Socket) => {
    from.on("data", (chunk: Buffer) => {
      setTimeout(() => {
        if (!to.destroyed) to.write(chunk);
      }, delayMs);
    });
    from.on("end", () => setTimeout(() => to.end(), delayMs));
    from.on("error", () => to.destroy());
    from.on("close", () => setTimeout(() => to.destroy(), delayMs));
  };
  const server = net.createServer((client) => {
    client.setNoDelay(true);
    const out = net.connect({ host, port, noDelay: true });
    for (const s of [client, out]) {
      sockets.add(s);
      s.once("close", () => sockets.delete(s));
    }
    later(client, out);
    later(out, client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}
