// A TCP proxy that holds every chunk `delayMs` before passing it on, in both directions: one
// path's injected latency (what netem's delay does to packets, done to a stream in user space,
// since this kernel has no sch_netem), for tests of what measures it. Its own process
// (delay-proxy-main.ts); order is kept (equal delays fire in order); stopped at teardown.
import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import type { Test } from "tap";
import { stopChild } from "./stop-child.ts";

export async function delayProxy(t: Test, upstream: string, delayMs: number): Promise<string> {
  const child = spawn(
    process.execPath,
    [path.join(import.meta.dirname, "delay-proxy-main.ts"), upstream, String(delayMs)],
    // not the test's environment: tap's NODE_OPTIONS would make it write into .tap/
    { env: { PATH: process.env.PATH }, stdio: ["ignore", "pipe", "inherit"] },
  );
  t.teardown(() => stopChild(child, { label: "the delay proxy" }));
  const port = await new Promise<string>((resolve, reject) => {
    if (!child.stdout) return reject(new Error("the delay proxy has no stdout"));
    createInterface({ input: child.stdout }).once("line", resolve);
    child.once("exit", (code) => reject(new Error(`the delay proxy exited (${code})`)));
  });
  return `127.0.0.1:${port.trim()}`;
}
