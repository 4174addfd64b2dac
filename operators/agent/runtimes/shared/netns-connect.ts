// A TCP connection to a port on the loopback of another network namespace (a pod's or a
// container's), for port-forwards and the hub's HTTP proxies. Node cannot enter a namespace, so
// `rlark-net connect` runs there under nsenter and relays the connection over its stdin and
// stdout; it says `connected` on stderr once the connection is up, or why not before it exits.
import { spawn } from "node:child_process";
import { Duplex } from "node:stream";

/** What the helper said is kept up to this much: its refusal reason, never a stream. */
const MAX_SAID = 4096;

/**
 * `enter` is the nsenter command line that enters the namespace (`nsenter --net=...` or
 * `nsenter -t PID -n`); `helper` the rlark-net binary.
 */
export function connectInNetns(enter: readonly string[], helper: string, port: number): Promise<Duplex> {
  const [nsenter, ...args] = enter;
  const child = spawn(nsenter as string, [...args, helper, "connect", `127.0.0.1:${port}`], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let said = "";
    const fail = (message: string) => reject(new Error(`port ${port}: ${message}`));
    child.once("error", (error) => fail(error.message));
    // "close", not "exit": the helper's reason may still be in the stderr pipe when it exits
    child.once("close", () => fail(said.trim().replace(/^rlark-net: /, "") || "the relay ended"));
    child.stderr.on("data", (chunk: Buffer) => {
      if (said.length < MAX_SAID) said += chunk.toString("utf8");
      if (!said.startsWith("connected\n")) return;
      child.stderr.removeAllListeners("data");
      child.stderr.resume();
      child.removeAllListeners("close");
      const stream = Duplex.from({ readable: child.stdout, writable: child.stdin });
      stream.once("close", () => child.kill());
      child.stdin.on("error", () => {});
      resolve(stream);
    });
  });
}
