// OpenSSH's sftp-server in a container, through the runtime's exec (kubernetes' pods/exec, the
// docker engine's exec API), which speaks lib/access-stream's frames with backpressure both ways.
// A small /bin/sh script enters the policy root, finds the server at the usual paths, tells us
// its pid and the root's real path (symlinks resolved in the container) on one line and execs the
// server: the line tells a started server from one that is not there, before the client is
// answered. sftp-server ends at EOF on its stdin, which is sent when the session ends; a
// container runtime that does not pass it on (kwok) would keep the server forever, so one that
// has not exited shortly after is ended by its pid through a second exec.
import { Duplex } from "node:stream";
import {
  type ExitStatus,
  encodeFrame,
  FrameDecoder,
  FrameType,
  MAX_FRAME_PAYLOAD,
  parseExit,
} from "../../../lib/access-stream/index.ts";
import { whenDrainedOrClosed } from "../../../lib/stream-drain.ts";
import type { ContainerFiles } from "../types.ts";
import { SERVED_REQUESTS } from "./sftp-filter.ts";

/** Where images keep OpenSSH's sftp-server: Debian/Ubuntu, Alpine, Fedora/RHEL. */
export const SFTP_SERVER_PATHS = [
  "/usr/lib/openssh/sftp-server",
  "/usr/lib/ssh/sftp-server",
  "/usr/lib/sftp-server",
  "/usr/libexec/openssh/sftp-server",
  "/usr/libexec/sftp-server",
];

const NO_ROOT = 125;
const NO_SERVER = 127;
/** The ready line (a path) and what the container says on stderr are kept up to this much. */
const MAX_LINE = 4096;
/** How long a server has to exit at EOF before it is ended by its pid. */
const EXIT_GRACE_MS = 2000;

// $1 the root, the rest the servers to try; exec keeps the shell's pid ($$); `pwd -P` is the root
// with its symlinks resolved
const SCRIPT = `cd "$1" 2>/dev/null || exit ${NO_ROOT}
shift
for server in "$@"; do
  if [ -x "$server" ]; then
    printf 'rlark-sftp %s %s\\n' "$$" "$(pwd -P)"
    exec "$server" -p ${SERVED_REQUESTS} -l ERROR
  fi
done
exit ${NO_SERVER}`;

export interface ExecFilesOptions {
  /** The policy root in the container (absolute). */
  root: string;
  /** Where to look for sftp-server; the first executable one runs. */
  servers: string[];
}

/** Runs `command` in the container: a session speaking lib/access-stream's frames. */
export type ContainerExec = (command: string[]) => Promise<Duplex>;

function refusal(where: string, options: ExecFilesOptions, exit: ExitStatus | undefined, stderr: string) {
  if (exit?.code === NO_SERVER)
    return new Error(
      `${where} has no sftp-server (looked at ${options.servers.join(", ")}): install OpenSSH's sftp-server in its image, or tell the agent where it is (--sftp-server)`,
    );
  if (exit?.code === NO_ROOT)
    return new Error(`${where} has no directory ${options.root} to serve files from`);
  const said = stderr.trim();
  return new Error(
    `${where}: sftp-server did not start (${exit ? JSON.stringify(exit) : "no exit status"})${said ? `: ${said}` : ""}`,
  );
}

/** Ends the server `pid` if it still runs (a pid the container reused for something else is left alone). */
async function killServer(exec: ContainerExec, pid: number): Promise<void> {
  const session = await exec([
    "/bin/sh",
    "-c",
    'grep -q sftp-server "/proc/$1/cmdline" 2>/dev/null && kill "$1"',
    "sh",
    String(pid),
  ]);
  // nothing to hear from it: a failure leaves the server to the container's runtime
  session.on("error", () => {});
  session.resume();
  session.end();
}

/**
 * Starts the server in the container `where` names (for errors); resolves once it runs, rejects
 * saying why it cannot.
 */
export async function startExecFiles(
  exec: ContainerExec,
  where: string,
  options: ExecFilesOptions,
): Promise<ContainerFiles> {
  const session = await exec(["/bin/sh", "-c", SCRIPT, "sh", options.root, ...options.servers]);
  const decoder = new FrameDecoder();
  let line = "";
  let stderr = "";
  let exit: ExitStatus | undefined;
  let root: string | undefined;
  let pid = 0;
  let exited = false;
  let stopping = false;
  // the client is done: EOF to the server, then its pid if it outlives the grace
  const stop = () => {
    if (stopping) return;
    stopping = true;
    if (!session.destroyed && session.writable) session.write(encodeFrame(FrameType.Eof));
    session.resume();
    setTimeout(() => {
      if (exited) return;
      session.destroy();
      void killServer(exec, pid).catch(() => {});
    }, EXIT_GRACE_MS).unref();
  };
  let started: (files: ContainerFiles) => void = () => {};
  let failed: (error: Error) => void = () => {};
  const ready = new Promise<ContainerFiles>((resolve, reject) => {
    started = resolve;
    failed = reject;
  });

  const server = new Duplex({
    write(chunk: Buffer, _encoding, done) {
      let more = true;
      for (let at = 0; at < chunk.length; at += MAX_FRAME_PAYLOAD) {
        more = session.write(encodeFrame(FrameType.Stdin, chunk.subarray(at, at + MAX_FRAME_PAYLOAD)));
      }
      if (more) return done();
      whenDrainedOrClosed(session, () => done());
    },
    final(done) {
      stop();
      done();
    },
    read() {
      session.resume();
    },
    destroy(error, done) {
      stop();
      done(error);
    },
  });
  const stdout = (data: Buffer) => {
    if (root === undefined) {
      line += data.toString("latin1");
      const end = line.indexOf("\n");
      if (end < 0) {
        if (line.length > MAX_LINE) session.destroy(new Error("sftp-server's start line is too long"));
        return;
      }
      const first = /^rlark-sftp (\d+) (\/.*)$/s.exec(line.slice(0, end));
      if (!first) {
        session.destroy(new Error(`an unexpected start line: ${JSON.stringify(line.slice(0, 200))}`));
        return;
      }
      pid = Number(first[1]);
      root = Buffer.from(first[2] as string, "latin1").toString("utf8");
      data = Buffer.from(line.slice(end + 1), "latin1");
      started({ server, root });
      if (data.length === 0) return;
    }
    // after the end nothing reads the server's output: it drains away
    if (!server.destroyed && !server.push(data)) session.pause();
  };
  session.on("data", (chunk: Buffer) => {
    let frames: ReturnType<FrameDecoder["push"]>;
    try {
      frames = decoder.push(chunk);
    } catch (error) {
      session.destroy(error as Error);
      return;
    }
    for (const frame of frames) {
      if (frame.type === FrameType.Stdout) stdout(frame.payload);
      // sftp-server logs only errors (-l ERROR); kept for a refusal's reason, bounded
      else if (frame.type === FrameType.Stderr && stderr.length < MAX_LINE)
        stderr += frame.payload.toString("utf8").slice(0, MAX_LINE - stderr.length);
      else if (frame.type === FrameType.Exit) exit = parseExit(frame.payload);
    }
  });
  session.once("end", () => {
    exited = true;
    if (root === undefined) failed(refusal(where, options, exit, stderr));
    else server.push(null);
  });
  session.on("error", (error) => {
    if (root === undefined) failed(error);
    else server.destroy(error);
  });
  session.once("close", () => {
    if (root === undefined) failed(refusal(where, options, exit, stderr));
  });
  return ready;
}
