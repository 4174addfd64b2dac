// SFTP into a process-runtime pod: OpenSSH's sftp-server runs here in the pod's directory with
// only the requests we serve enabled (no symlink or hardlink creation), behind the packet filter
// (sftp-filter.ts) with the path policy resolved on this machine, symlinks followed.
import { spawn } from "node:child_process";
import { realpathSync } from "node:fs";
import { Duplex } from "node:stream";
import { filterSftp, SERVED_REQUESTS } from "./sftp-filter.ts";
import { insideLocal, insideNamed, type PolicyOptions } from "./sftp-policy.ts";

export interface FilesOptions {
  /** OpenSSH's sftp-server. Default /usr/lib/openssh/sftp-server. */
  sftpServer?: string;
  /** Largest file an upload may write. Default 64 GiB. */
  maxFileBytes?: number;
}

export const DEFAULT_MAX_FILE_BYTES = 64 * 1024 ** 3;

/**
 * Starts an SFTP server confined to `root`; returns the Duplex the tunnel stream is piped to.
 * `prefix` runs it as the pod's sessions run (its namespace and user, AccessEnvironment.enter),
 * so files are written with the pod's uid and read with its rights.
 */
export function startFiles(root: string, options: FilesOptions = {}, prefix: string[] = []): Duplex {
  const realRoot = realpathSync(root);
  const sftpServer = options.sftpServer ?? "/usr/lib/openssh/sftp-server";
  const argv = [sftpServer, "-d", realRoot, "-p", SERVED_REQUESTS, "-l", "ERROR"];
  const [program, ...args] = prefix.length > 0 ? [...prefix, ...argv] : argv;
  const child = spawn(program as string, args, { cwd: realRoot, stdio: ["pipe", "pipe", "ignore"] });
  child.stdin.on("error", () => {});
  const server = Duplex.from({ writable: child.stdin, readable: child.stdout });
  server.once("close", () => child.kill());
  child.once("error", (error) => server.destroy(error));
  return filterSftp(server, {
    place: "the pod's directory",
    inside: (path, followLast) => insideLocal(realRoot, path, followLast),
    maxFileBytes: options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES,
  });
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
