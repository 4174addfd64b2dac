// One supervised process: started in its own process group, restarted with exponential backoff
// when it ends, stopped by signalling the whole group (SIGTERM, then SIGKILL after a grace period)
// and waiting until no member of the group is left, so nothing it started outlives it.
//
// States follow supervisord (and seed 002): STOPPED, STARTING (spawned, not yet up for `startMs`),
// RUNNING, BACKOFF (ended; waiting to restart), FAILED (ended `maxRetries` times in a row; no more
// restarts until someone starts it again).
import { type ChildProcess, spawn } from "node:child_process";
import { type Clock, systemClock, type TimerId } from "../../lib/clock.ts";
import type { ProcessState } from "../capability-file.ts";
import { lineSplitter } from "./log-ring.ts";

export interface Backoff {
  initialMs: number;
  maxMs: number;
  /** A run that lasted this long forgives the earlier failures. */
  resetAfterMs: number;
}

/** Delay before the restart after the `failures`-th consecutive end (1-based): doubling, capped. */
export function backoffDelay(policy: Backoff, failures: number): number {
  return Math.min(policy.maxMs, policy.initialMs * 2 ** Math.min(Math.max(0, failures - 1), 40));
}

export interface SupervisorOptions {
  /** Names the process in logs and status (roscore, roslaunch, ffmpeg). */
  name: string;
  command: readonly string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** How long a run must last to count as RUNNING. */
  startMs: number;
  backoff: Backoff;
  /** Consecutive ends after which the state is FAILED; 0 restarts forever. */
  maxRetries: number;
  /** Grace between SIGTERM and SIGKILL on stop. */
  stopTimeoutMs: number;
  maxLineBytes?: number;
  onLine?: (stream: "stdout" | "stderr", line: string) => void;
  /** Called after every state change. */
  onChange?: () => void;
  clock?: Clock;
}

export interface SupervisorStatus {
  name: string;
  state: ProcessState;
  pid: number;
  restarts: number;
  /** RFC 3339 start of the current run, "" when none. */
  startedAt: string;
  /** How the last run ended ("exit code 1", "signal SIGKILL", "spawn error: …"), "" before any. */
  lastExit: string;
  /** The time of the restart when in BACKOFF, "" otherwise. */
  restartAt: string;
}

const GROUP_POLL_MS = 25;

export class Supervisor {
  readonly #o: SupervisorOptions;
  readonly #clock: Clock;
  #state: ProcessState = "STOPPED";
  #child: ChildProcess | undefined;
  #pgid = 0;
  #startedAt = 0;
  #failures = 0;
  #restarts = 0;
  #lastExit = "";
  #restartAt = 0;
  #timer: TimerId | undefined;
  #exited: Promise<void> = Promise.resolve();
  #stopping: Promise<void> | undefined;

  constructor(options: SupervisorOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
  }

  get state(): ProcessState {
    return this.#state;
  }

  status(): SupervisorStatus {
    const iso = (ms: number) => (ms ? new Date(ms).toISOString() : "");
    return {
      name: this.#o.name,
      state: this.#state,
      pid: this.#child?.pid ?? 0,
      restarts: this.#restarts,
      startedAt: this.#child ? iso(this.#startedAt) : "",
      lastExit: this.#lastExit,
      restartAt: this.#state === "BACKOFF" ? iso(this.#restartAt) : "",
    };
  }

  /** Starts the process unless it runs or waits to restart; a FAILED one starts afresh. */
  async start(): Promise<void> {
    if (this.#stopping) await this.#stopping;
    if (this.#state !== "STOPPED" && this.#state !== "FAILED") return;
    this.#failures = 0;
    this.#spawn();
  }

  /** Stops the process and everything in its group; resolves when none of them is left. */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop().finally(() => {
      this.#stopping = undefined;
    });
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    this.#clearTimer();
    const pgid = this.#pgid;
    if (pgid) {
      signalGroup(pgid, "SIGTERM");
      const gone = await this.#waitGroupGone(pgid, this.#o.stopTimeoutMs);
      if (!gone) {
        signalGroup(pgid, "SIGKILL");
        await this.#waitGroupGone(pgid, Number.POSITIVE_INFINITY);
      }
    }
    await this.#exited;
    this.#pgid = 0;
    this.#set("STOPPED");
  }

  #spawn(): void {
    this.#set("STARTING");
    const [file, ...args] = this.#o.command;
    let child: ChildProcess;
    try {
      child = spawn(file ?? "", args, {
        // Its own session and process group: stop signals the group, and a terminal's ^C does not.
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
        env: this.#o.env ?? process.env,
        ...(this.#o.cwd ? { cwd: this.#o.cwd } : {}),
      });
    } catch (error) {
      this.#ended(`spawn error: ${(error as Error).message}`);
      return;
    }
    this.#child = child;
    this.#pgid = child.pid ?? 0;
    this.#startedAt = this.#clock.now();
    const max = this.#o.maxLineBytes ?? 8192;
    for (const stream of ["stdout", "stderr"] as const) {
      child[stream]?.on(
        "data",
        lineSplitter(max, (line) => this.#o.onLine?.(stream, line)),
      );
    }
    let resolveExited = () => {};
    this.#exited = new Promise((resolve) => {
      resolveExited = resolve;
    });
    let done = false;
    const finish = (how: string) => {
      if (done) return;
      done = true;
      this.#child = undefined;
      resolveExited();
      if (this.#stopping) {
        this.#lastExit = how;
        return;
      }
      this.#ended(how);
    };
    child.once("error", (error) => finish(`spawn error: ${error.message}`));
    child.once("exit", (code, signal) => finish(signal ? `signal ${signal}` : `exit code ${code}`));
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      if (this.#child === child && this.#state === "STARTING") this.#set("RUNNING");
    }, this.#o.startMs);
  }

  /** The process ended on its own: clear its group, then back off or give up. */
  #ended(how: string): void {
    this.#clearTimer();
    this.#lastExit = how;
    // What it started may still run in its group: a restart must not find the old one's children.
    if (this.#pgid) signalGroup(this.#pgid, "SIGKILL");
    this.#pgid = 0;
    const ran = this.#startedAt ? this.#clock.now() - this.#startedAt : 0;
    this.#failures = ran >= this.#o.backoff.resetAfterMs ? 1 : this.#failures + 1;
    if (this.#o.maxRetries > 0 && this.#failures > this.#o.maxRetries) {
      this.#set("FAILED");
      return;
    }
    const delay = backoffDelay(this.#o.backoff, this.#failures);
    this.#restartAt = this.#clock.now() + delay;
    this.#set("BACKOFF");
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      if (this.#state !== "BACKOFF") return;
      this.#restarts++;
      this.#spawn();
    }, delay);
  }

  #waitGroupGone(pgid: number, timeoutMs: number): Promise<boolean> {
    const deadline = this.#clock.now() + timeoutMs;
    return new Promise((resolve) => {
      const poll = () => {
        if (!groupAlive(pgid)) resolve(true);
        else if (this.#clock.now() >= deadline) resolve(false);
        else this.#clock.setTimeout(poll, GROUP_POLL_MS);
      };
      poll();
    });
  }

  #clearTimer(): void {
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #set(state: ProcessState): void {
    this.#state = state;
    this.#o.onChange?.();
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already empty.
  }
}

/** Whether any process of the group is left (a zombie leader counts until Node reaps it). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}
