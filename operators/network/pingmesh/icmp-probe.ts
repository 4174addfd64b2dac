// ICMP echo for PingMesh (docs/pingmesh.md#icmp): Node opens no raw socket, so `rlark-net
// icmp-probe` (Go, CAP_NET_RAW) sends the echoes; this end writes it one request line per probe
// and reads one answer line each. A probe resolves with the RTT in ms, or undefined when the echo
// went unanswered (a lost probe); it rejects when the helper is not running (no ICMP figure at all,
// which is not loss). Lines are bounded; the helper is stopped with close().
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";

export interface IcmpProber {
  probe(host: string): Promise<number | undefined>;
  close(): void;
}

const MAX_WAITING = 1024;

export function startIcmpProber(rlarkNet: string, timeoutMs: number): IcmpProber {
  const child: ChildProcess = spawn(rlarkNet, ["icmp-probe"], { stdio: ["pipe", "pipe", "pipe"] });
  const waiting = new Map<
    string,
    { resolve: (ms: number | undefined) => void; reject: (e: Error) => void }
  >();
  let exited: Error | undefined;
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-500);
  });
  child.stdin?.on("error", () => {});
  child.on("error", (error) => end(error));
  child.on("exit", (code, signal) =>
    end(new Error(`rlark-net icmp-probe exited (${signal ?? code}): ${stderr.trim()}`)),
  );
  const end = (error: Error) => {
    exited ??= error;
    for (const w of waiting.values()) w.reject(exited);
    waiting.clear();
  };
  if (child.stdout)
    createInterface({ input: child.stdout, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (line) => {
      if (line.length > 64) return;
      const [id = "", value = ""] = line.split(" ");
      const w = waiting.get(id);
      if (!w) return;
      waiting.delete(id);
      const us = Number(value);
      w.resolve(value === "lost" || !Number.isFinite(us) ? undefined : us / 1000);
    });
  let next = 0;
  return {
    probe(host) {
      if (exited) return Promise.reject(exited);
      if (waiting.size >= MAX_WAITING) return Promise.resolve(undefined);
      const id = String(++next);
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        child.stdin?.write(`${id} ${host} ${timeoutMs}\n`);
      });
    },
    close() {
      child.stdin?.end();
      child.kill("SIGTERM");
    },
  };
}
