// SFTP into a process-runtime pod: OpenSSH's sftp-server runs here in the pod's directory with
// only the requests we serve enabled (no symlink or hardlink creation), behind the packet filter
// (sftp-filter.ts) with the path policy resolved on this machine as the kernel resolves it.
import { spawn } from "node:child_process";
import { realpathSync } from "node:fs";
import { Duplex } from "node:stream";
import { filterSftp, SERVED_REQUESTS, SERVER_ENDED, serverVersion } from "../runtimes/shared/sftp-filter.ts";
import { insideLocal, insideNamed, type PolicyOptions } from "../runtimes/shared/sftp-policy.ts";

export interface FilesOptions {
  /** OpenSSH's sftp-server. Default /usr/lib/openssh/sftp-server. */
  sftpServer?: string;
  /** Largest file an upload may write. Default 64 GiB. */
  maxFileBytes?: number;
}

export const DEFAULT_MAX_FILE_BYTES = 64 * 1024 ** 3;

/** What the user sees of sftp-server's own words when it cannot start. */
const STDERR_BYTES = 2048;

/**
 * Starts an SFTP server confined to `root`; resolves with the Duplex the tunnel stream is piped
 * to once the server has answered its version. `prefix` runs it as the pod's sessions run (its
 * namespace and user, AccessEnvironment.enter), so files are written with the pod's uid and read
 * with its rights. A server that cannot start rejects with its exit and the start of its stderr.
 */
export async function startFiles(
  root: string,
  options: FilesOptions = {},
  prefix: string[] = [],
): Promise<Duplex> {
  const realRoot = realpathSync(root);
  const sftpServer = options.sftpServer ?? "/usr/lib/openssh/sftp-server";
  const argv = [sftpServer, "-d", realRoot, "-p", SERVED_REQUESTS, "-l", "ERROR"];
  const [program, ...args] = prefix.length > 0 ? [...prefix, ...argv] : argv;
  const child = spawn(program as string, args, { cwd: realRoot, stdio: ["pipe", "pipe", "pipe"] });
  child.stdin.on("error", () => {});
  // Read to the end (a server that logs must never block on a full pipe), kept only to the bound.
  let said = Buffer.alloc(0);
  child.stderr.on("data", (chunk: Buffer) => {
    if (said.length < STDERR_BYTES) said = Buffer.concat([said, chunk]).subarray(0, STDERR_BYTES);
  });
  const ended = new Promise<string>((resolve) => {
    child.once("error", (error) => resolve(error.message));
    child.once("close", (code, signal) => resolve(signal ? `signal ${signal}` : `exit status ${code}`));
  });
  const server = Duplex.from({ writable: child.stdin, readable: child.stdout });
  server.once("close", () => child.kill());
  child.once("error", (error) => server.destroy(error));
  let version: Buffer;
  try {
    version = await serverVersion(server);
  } catch (error) {
    // One that closed its output is exiting already (its status stands); one silent goes now.
    child.kill("SIGKILL");
    const exit = await ended;
    const how = (error as Error).message === SERVER_ENDED ? exit : (error as Error).message;
    const words = printable(said.toString("utf8"));
    throw new Error(`sftp-server could not start (${how})${words ? `: ${words}` : ""}`);
  }
  return filterSftp(
    server,
    {
      place: "the pod's directory",
      inside: (path, followLast) => insideLocal(realRoot, path, followLast),
      maxFileBytes: options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES,
    },
    version,
  );
}

/** One line of plain text: no terminal control sequences reach the user's screen. */
function printable(text: string): string {
  return text
    .split(/\r?\n/)
    .map((line) => line.replace(/[\p{Cc}\p{Cf}]/gu, "").trim())
    .filter(Boolean)
    .join("; ");
}

/** The policy of a pod whose files are not on this machine: `root` is a path in its container. */
export function containerPolicy(root: string, options: FilesOptions = {}): PolicyOptions {
  return {
    place: root,
    inside: (path, _followLast, named) => insideNamed(root, path, named),
    resolvedInside: (resolved) => insideNamed(root, resolved, true),
    maxFileBytes: options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES,
  };
}
