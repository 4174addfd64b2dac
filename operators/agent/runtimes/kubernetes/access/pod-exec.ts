// A shell or exec session into a kubernetes pod through the apiserver's pods/exec subresource,
// served as the same frames a process-runtime session speaks (lib/access-stream), so the hub
// does not know which runtime it talks to. Channels: 0 stdin, 1 stdout, 2 stderr, 3 the exit
// Status, 4 resize; v5.channel.k8s.io adds 255 (close a stream) for EOF on stdin.
import { Duplex } from "node:stream";
import type { KubeConfig } from "@kubernetes/client-node";
import {
  type AccessSessionRequest,
  type ExitStatus,
  encodeFrame,
  FrameDecoder,
  FrameType,
  MAX_FRAME_PAYLOAD,
  parseResize,
} from "../../../../lib/access-stream/index.ts";
import { type ChannelSocket, openChannelSocket } from "./channel-socket.ts";

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const STATUS = 3;
const RESIZE = 4;
const CLOSE = 255;

/**
 * A pod has no API to signal the program an exec started; on a terminal the line discipline
 * turns these keys into the signals, as when the user types them.
 */
const TERMINAL_SIGNAL_KEYS: Record<string, string> = { INT: "\x03", QUIT: "\x1c", TSTP: "\x1a" };

/** Go's names of signals in an exec's "signal: ..." error, as the frames name them. */
const GO_SIGNALS: Record<string, string> = {
  interrupt: "INT",
  killed: "KILL",
  terminated: "TERM",
  hangup: "HUP",
  quit: "QUIT",
};

interface ExecStatus {
  status?: string;
  message?: string;
  reason?: string;
  details?: { causes?: { reason?: string; message?: string }[] };
}

/**
 * The program's exit from the Status on channel 3. A kubelet names a non-zero exit in a cause;
 * kwok (and other runtimes that wrap Go's exec error) only in the message: "... exit status 3".
 * Anything else failed before the program ran: its message goes to stderr.
 */
export function execExit(status: ExecStatus): { exit: ExitStatus; message?: string } {
  if (status.status === "Success") return { exit: { code: 0 } };
  const cause = status.details?.causes?.find((c) => c.reason === "ExitCode");
  const code = Number(cause?.message);
  if (cause && Number.isInteger(code)) return { exit: { code } };
  const message = status.message ?? "the exec failed";
  const exited = /exit status (\d+)\s*$/.exec(message);
  if (exited) return { exit: { code: Number(exited[1]) } };
  const signalled = /signal: (\w+)\s*$/.exec(message);
  const signal = signalled ? GO_SIGNALS[signalled[1] as string] : undefined;
  if (signal) return { exit: { signal } };
  return { exit: { code: 126 }, message };
}

/** The login shell of a pod: bash where the image has it, sh otherwise. */
function loginShell(term: string | undefined): string[] {
  // term passed the request's [\w.+-] check, so it is safe inside the script
  const exportTerm = term ? `export TERM=${term}; ` : "";
  return [
    "/bin/sh",
    "-c",
    `${exportTerm}if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi`,
  ];
}

export interface PodExecTarget {
  namespace: string;
  name: string;
  container: string;
}

/** Starts the session; resolves once the apiserver has accepted it. */
export async function startPodExec(
  kubeConfig: KubeConfig,
  pod: PodExecTarget,
  request: AccessSessionRequest,
): Promise<Duplex> {
  const tty = request.pty !== undefined;
  const query = new URLSearchParams({
    container: pod.container,
    stdin: "true",
    stdout: "true",
    // a terminal has one output: the pty merges stderr into it
    stderr: String(!tty),
    tty: String(tty),
  });
  for (const arg of request.command ?? loginShell(request.pty?.term)) query.append("command", arg);
  const path = `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods/${encodeURIComponent(pod.name)}/exec?${query}`;

  let socket: ChannelSocket | undefined;
  let exit: ExitStatus | undefined;
  let finished = false;
  const finish = (error?: Error) => {
    if (finished) return;
    finished = true;
    if (exit) {
      duplex.push(encodeFrame(FrameType.Exit, JSON.stringify(exit)));
      duplex.push(null);
    } else {
      duplex.destroy(
        error ?? new Error(`exec in pod ${pod.namespace}/${pod.name}: ended without an exit status`),
      );
    }
  };
  const output = (type: FrameType, data: Buffer) => {
    let full = false;
    for (let at = 0; at < data.length; at += MAX_FRAME_PAYLOAD) {
      if (!duplex.push(encodeFrame(type, data.subarray(at, at + MAX_FRAME_PAYLOAD)))) full = true;
    }
    // the hub reads as fast as its client does: stop reading the apiserver until it has
    if (full) socket?.pause();
  };
  const decoder = new FrameDecoder();
  const duplex = new Duplex({
    write(chunk: Buffer, _encoding, done) {
      let frames: ReturnType<FrameDecoder["push"]>;
      try {
        frames = decoder.push(chunk);
      } catch (error) {
        done(error as Error);
        return;
      }
      const ws = socket;
      if (!ws) return done();
      let wait = false;
      for (const frame of frames) {
        if (frame.type === FrameType.Stdin) {
          if (!ws.send(STDIN, frame.payload)) wait = true;
        } else if (frame.type === FrameType.Eof) {
          // a terminal has no half-close: the program sees the user's ^D instead; before v5 the
          // channel protocol cannot close stdin alone
          if (!tty && ws.protocol === "v5.channel.k8s.io") ws.send(CLOSE, Buffer.from([STDIN]));
        } else if (frame.type === FrameType.Resize) {
          const size = parseResize(frame.payload);
          if (size && tty)
            ws.send(RESIZE, Buffer.from(JSON.stringify({ Width: size.cols, Height: size.rows })));
        } else if (frame.type === FrameType.Signal) {
          const key = tty ? TERMINAL_SIGNAL_KEYS[frame.payload.toString("utf8")] : undefined;
          if (key) ws.send(STDIN, Buffer.from(key));
        }
      }
      // input waits for the apiserver to take it: a client typing faster is held back by SSH windows
      if (wait) void ws.drain().then(() => done());
      else done();
    },
    read() {
      socket?.resume();
    },
    destroy(error, done) {
      socket?.close();
      done(error);
    },
  });

  socket = await openChannelSocket(
    kubeConfig,
    `exec in pod ${pod.namespace}/${pod.name}`,
    path,
    ["v5.channel.k8s.io", "v4.channel.k8s.io"],
    {
      message(channel, data) {
        if (channel === STDOUT) output(FrameType.Stdout, data);
        else if (channel === STDERR) output(FrameType.Stderr, data);
        else if (channel === STATUS) {
          let status: ExecStatus = {};
          try {
            status = JSON.parse(data.toString("utf8")) as ExecStatus;
          } catch {
            status = { message: "an exit Status that is not JSON" };
          }
          const result = execExit(status);
          if (result.message) output(FrameType.Stderr, Buffer.from(`${result.message}\r\n`));
          exit = result.exit;
        }
      },
      closed: finish,
    },
  );
  // the hub gave up (its client left) while the apiserver was answering
  if (duplex.destroyed) socket.close();
  else if (request.pty) {
    socket.send(RESIZE, Buffer.from(JSON.stringify({ Width: request.pty.cols, Height: request.pty.rows })));
  }
  return duplex;
}
