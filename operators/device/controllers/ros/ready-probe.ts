// The readiness check of the robot software: a command run every `intervalMs` while the processes
// run (e.g. `rostopic list`, `ros2 node list`); exit 0 is ready. A check that outlives its timeout
// is killed with its process group and counts as a failure.
import { spawn } from "node:child_process";
import { type Clock, systemClock, type TimerId } from "../../../lib/clock.ts";

export type ProbeResult = { ok: boolean; message: string };

/** Runs `command` once; its group is killed after `timeoutMs`. The last output line is the message. */
export function probeOnce(
  command: readonly string[],
  options: { timeoutMs: number; env?: NodeJS.ProcessEnv; cwd?: string },
): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const [file, ...args] = command;
    const child = spawn(file ?? "", args, {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: options.env ?? process.env,
      ...(options.cwd ? { cwd: options.cwd } : {}),
    });
    let last = "";
    const keep = (chunk: Buffer) => {
      // Only the end matters, and only a bounded piece of it.
      last = `${last}${chunk.toString("utf8")}`.slice(-2048);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-(child.pid ?? 0), "SIGKILL");
      } catch {}
    }, options.timeoutMs);
    child.once("error", (error) => {
      clearTimeout(timer);
      resolve({ ok: false, message: `readiness check cannot start: ${error.message}` });
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      const line = last.trim().split("\n").pop() ?? "";
      if (timedOut)
        resolve({ ok: false, message: `readiness check timed out after ${options.timeoutMs} ms` });
      else if (code === 0) resolve({ ok: true, message: line });
      else
        resolve({
          ok: false,
          message: `readiness check failed (${signal ?? `exit code ${code}`})${line ? `: ${line}` : ""}`,
        });
    });
  });
}

export interface ReadyProbeOptions {
  command: readonly string[];
  intervalMs: number;
  timeoutMs: number;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  onResult: (result: ProbeResult) => void;
  clock?: Clock;
}

/** Runs the check repeatedly until stopped, reporting each result. */
export class ReadyProbe {
  #timer: TimerId | undefined;
  #running = false;
  readonly #clock: Clock;
  readonly #options: ReadyProbeOptions;

  constructor(options: ReadyProbeOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    void this.#run();
  }

  stop(): void {
    this.#running = false;
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  async #run(): Promise<void> {
    if (!this.#running) return;
    const result = await probeOnce(this.#options.command, this.#options);
    if (!this.#running) return;
    this.#options.onResult(result);
    this.#timer = this.#clock.setTimeout(() => void this.#run(), this.#options.intervalMs);
  }
}
