// The agent's end of a shell or exec session into a process-runtime pod: the program runs in the
// pod's working directory with its environment (and, for a pod with a network of its own, in its
// namespace and as its user), under a pty (Python's pty module) when the
// client asked for a terminal, or on pipes otherwise. Frames in (input, resize, signal, EOF),
// frames out (output, exit status); see lib/access-stream.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { Duplex, type Writable } from "node:stream";
import {
  type AccessSessionRequest,
  encodeFrame,
  FrameDecoder,
  FrameType,
  parseResize,
} from "../../lib/access-stream/index.ts";
import type { AccessEnvironment } from "../runtimes/types.ts";
import { PTY_HELPER } from "./pty-helper.ts";

const HANGUP_GRACE_MS = 2000;
const SIGNALS = new Set(["INT", "TERM", "HUP", "QUIT", "KILL", "USR1", "USR2", "WINCH", "TSTP", "CONT"]);

export interface SessionOptions {
  /** The Python interpreter that runs the pty helper. Default "python3" on PATH. */
  python?: string;
}

function loginShell(env: Record<string, string>): string {
  const shell = env.SHELL;
  if (shell && existsSync(shell)) return shell;
  return existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh";
}

/** Starts the session's program and returns the Duplex the tunnel stream is piped to. */
export function startSession(
  request: AccessSessionRequest,
  target: AccessEnvironment,
  options: SessionOptions = {},
): Duplex {
  const env = { ...target.env, ...(request.pty ? { TERM: request.pty.term } : {}) };
  const argv = request.command ?? [loginShell(env)];
  // nsenter and setpriv exec what follows: the pid (and group) spawned is the program's.
  const prefix = target.enter?.prefix ?? [];
  let child: ChildProcess;
  let control: Writable | undefined;
  if (request.pty) {
    const [program, ...args] = [
      ...prefix,
      options.python ?? "python3",
      "-c",
      PTY_HELPER,
      String(request.pty.cols),
      String(request.pty.rows),
      ...argv,
    ] as [string, ...string[]];
    // The program's stderr is the pty; the helper's own (a Python too old, say) goes to the user.
    child = spawn(program, args, { cwd: target.cwd, env, stdio: ["pipe", "pipe", "pipe", "pipe"] });
    control = child.stdio[3] as Writable;
  } else {
    const [program, ...args] = [...prefix, ...argv] as [string, ...string[]];
    // A group of its own, so a signal reaches the command's children too.
    child = spawn(program, args, {
      cwd: target.cwd,
      env,
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
  }
  const decoder = new FrameDecoder();
  let exited = false;
  const duplex = new Duplex({
    write(chunk: Buffer, _encoding, done) {
      let frames: ReturnType<FrameDecoder["push"]>;
      try {
        frames = decoder.push(chunk);
      } catch (error) {
        done(error as Error);
        return;
      }
      let waiting = false;
      for (const frame of frames) {
        if (frame.type === FrameType.Stdin && child.stdin?.writable) {
          if (!child.stdin.write(frame.payload)) waiting = true;
        } else if (frame.type === FrameType.Eof) {
          // A terminal has no half-close: the program sees the user's ^D instead.
          if (!request.pty) child.stdin?.end();
        } else if (frame.type === FrameType.Resize) {
          const size = parseResize(frame.payload);
          if (size && control?.writable) control.write(`resize ${size.cols} ${size.rows}\n`);
        } else if (frame.type === FrameType.Signal) {
          signal(frame.payload.toString("utf8"));
        }
      }
      // Input waits for the program to read it: a client typing faster is held back by SSH windows.
      if (waiting) child.stdin?.once("drain", () => done());
      else done();
    },
    read() {
      child.stdout?.resume();
      child.stderr?.resume();
    },
    destroy(error, done) {
      if (!exited) {
        signal("HUP");
        // A program that ignores the hangup goes with its terminal: killing the pty helper closes
        // the pty, and the kernel hangs up the program's session.
        setTimeout(() => {
          if (!exited) child.kill("SIGKILL");
        }, HANGUP_GRACE_MS);
      }
      // Nobody reads the output any more: let it drain away, or the pipes (and the helper
      // blocked writing to them) would outlive the session.
      child.stdout?.resume();
      child.stderr?.resume();
      child.stdin?.end();
      done(error);
    },
  });
  const signal = (name: string) => {
    if (!SIGNALS.has(name) || exited || child.pid === undefined) return;
    if (control?.writable) control.write(`signal ${name}\n`);
    else {
      try {
        process.kill(-child.pid, `SIG${name}` as NodeJS.Signals);
      } catch {
        // Already gone.
      }
    }
  };
  const forward = (stream: NodeJS.ReadableStream | null, type: FrameType) => {
    if (!stream) return;
    stream.on("data", (chunk: Buffer) => {
      if (!duplex.destroyed && !duplex.push(encodeFrame(type, chunk))) stream.pause();
    });
  };
  forward(child.stdout, FrameType.Stdout);
  forward(child.stderr, FrameType.Stderr);
  child.stdin?.on("error", () => {});
  control?.on("error", () => {});
  const outputDone = Promise.all(
    [child.stdout, child.stderr].map((s) => (s ? new Promise((r) => s.once("close", r)) : undefined)),
  );
  child.once("error", (error) => {
    exited = true;
    const what = request.pty ? `a terminal for ${argv[0]} (its helper runs Python 3)` : argv[0];
    duplex.push(encodeFrame(FrameType.Stderr, `rlark: could not start ${what}: ${error.message}\r\n`));
    duplex.push(encodeFrame(FrameType.Exit, JSON.stringify({ code: 127 })));
    duplex.push(null);
  });
  child.once("exit", (code, sig) => {
    exited = true;
    void outputDone.then(() => {
      duplex.push(
        encodeFrame(FrameType.Exit, JSON.stringify(sig ? { signal: sig.replace(/^SIG/, "") } : { code })),
      );
      duplex.push(null);
    });
  });
  return duplex;
}
