// A shell or exec session into a docker container through the engine's exec API, served as the
// same frames a process-runtime session speaks (lib/access-stream), so the hub does not know
// which runtime it talks to. The exec's hijacked connection carries stdin up and, without a
// terminal, stdout and stderr multiplexed down (the engine's 8-byte frame headers); with a
// terminal, one raw output. The exit code is the exec's, from its inspect once the output ends.
import { Duplex } from "node:stream";
import type Docker from "dockerode";
import {
  type AccessSessionRequest,
  type ExitStatus,
  encodeFrame,
  FrameDecoder,
  FrameType,
  MAX_FRAME_PAYLOAD,
  parseResize,
} from "../../../lib/access-stream/index.ts";

/** The engine cannot signal an exec's program; on a terminal the line discipline turns these keys into the signals. */
const TERMINAL_SIGNAL_KEYS: Record<string, string> = { INT: "\x03", QUIT: "\x1c", TSTP: "\x1a" };

/** The login shell of a container: bash where the image has it, sh otherwise. */
function loginShell(term: string | undefined): string[] {
  // term passed the request's [\w.+-] check, so it is safe inside the script
  const exportTerm = term ? `export TERM=${term}; ` : "";
  return [
    "/bin/sh",
    "-c",
    `${exportTerm}if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi`,
  ];
}

/** The exec's exit code; the engine may record it a moment after the output has ended. */
async function exitCode(exec: Docker.Exec): Promise<ExitStatus> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const info = await exec.inspect();
    if (!info.Running && typeof info.ExitCode === "number") return { code: info.ExitCode };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("the exec's output ended but the engine reports no exit code");
}

/** Starts the session in the running `container`; resolves once the engine has started it. */
export async function startContainerExec(
  container: Docker.Container,
  modem: { demuxStream(stream: NodeJS.ReadableStream, stdout: unknown, stderr: unknown): void },
  label: string,
  request: AccessSessionRequest,
): Promise<Duplex> {
  const tty = request.pty !== undefined;
  const exec = await container.exec({
    Cmd: request.command ?? loginShell(request.pty?.term),
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: tty,
    ...(request.pty ? { Env: [`TERM=${request.pty.term}`] } : {}),
  });
  const socket = (await exec.start({ hijack: true, stdin: true, Tty: tty })) as Duplex;

  let finished = false;
  const finish = (error?: Error) => {
    if (finished) return;
    finished = true;
    if (error) {
      duplex.destroy(error);
      return;
    }
    exitCode(exec).then(
      (exit) => {
        duplex.push(encodeFrame(FrameType.Exit, JSON.stringify(exit)));
        duplex.push(null);
      },
      (failure: Error) => duplex.destroy(new Error(`exec in ${label}: ${failure.message}`)),
    );
  };
  const output = (type: FrameType) => ({
    write(data: Buffer) {
      let full = false;
      for (let at = 0; at < data.length; at += MAX_FRAME_PAYLOAD) {
        if (!duplex.push(encodeFrame(type, data.subarray(at, at + MAX_FRAME_PAYLOAD)))) full = true;
      }
      // the hub reads as fast as its client does: stop reading the engine until it has
      if (full) socket.pause();
      return !full;
    },
  });
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
      let wait = false;
      for (const frame of frames) {
        if (frame.type === FrameType.Stdin) {
          if (!socket.write(frame.payload)) wait = true;
        } else if (frame.type === FrameType.Eof) {
          // a terminal has no half-close: the program sees the user's ^D instead
          if (!tty) socket.end();
        } else if (frame.type === FrameType.Resize) {
          const size = parseResize(frame.payload);
          if (size && tty) exec.resize({ w: size.cols, h: size.rows }).catch(() => undefined);
        } else if (frame.type === FrameType.Signal) {
          const key = tty ? TERMINAL_SIGNAL_KEYS[frame.payload.toString("utf8")] : undefined;
          if (key) socket.write(key);
        }
      }
      // input waits for the engine to take it: a client typing faster is held back by SSH windows
      if (wait) socket.once("drain", () => done());
      else done();
    },
    read() {
      socket.resume();
    },
    destroy(error, done) {
      socket.destroy();
      done(error);
    },
  });

  if (tty) socket.on("data", (data: Buffer) => output(FrameType.Stdout).write(data));
  else modem.demuxStream(socket, output(FrameType.Stdout), output(FrameType.Stderr));
  socket.on("end", () => finish());
  socket.on("close", () => finish());
  socket.on("error", (error) => finish(new Error(`exec in ${label}: ${error.message}`)));
  if (request.pty) exec.resize({ w: request.pty.cols, h: request.pty.rows }).catch(() => undefined);
  return duplex;
}
