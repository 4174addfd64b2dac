// The delay proxy's process (delay-proxy.ts): `node delay-proxy-main.ts <upstream host:port>
// <delay ms>` listens on 127.0.0.1, prints its port, and holds every chunk <delay ms> before
// passing it on, both directions. A process of its own: its timers do not wait on the test's
// event loop (which runs a hub), so the delay injected is the delay asked.
import net, { type AddressInfo } from "node:net";

const [upstream = "", delayText = ""] = process.argv.slice(2);
const delayMs = Number(delayText);
const at = upstream.lastIndexOf(":");
const [host, port] = [upstream.slice(0, at), Number(upstream.slice(at + 1))];
if (at < 1 || !Number.isInteger(port) || !(delayMs >= 0)) {
  process.stderr.write("usage: delay-proxy-main.ts <host:port> <delay ms>\n");
  process.exit(2);
}

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
  later(client, out);
  later(out, client);
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
});
process.on("SIGTERM", () => process.exit(0));
