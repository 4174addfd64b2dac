// Whether a pod's processes listen on a TCP port. Process-runtime pods share the machine's
// network, so 127.0.0.1:<port> may be anything on it (the hub itself under `rlark up`); a proxy
// reaches a port only when a socket listening on it belongs to one of the pod's processes. The
// sockets are read from the pod's own view (/proc/<pid>/net): a Domain pod has a network
// namespace of its own, whose sockets the machine's /proc/net/tcp does not list.
import { readdir, readFile, readlink } from "node:fs/promises";

const LISTEN = "0A";

/** Inodes of the sockets listening on `port` (IPv4 and IPv6) in the network of `pid`. */
async function listeningInodes(port: number, procRoot: string, pid: number): Promise<Set<string>> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  for (const table of ["tcp", "tcp6"]) {
    const text = await readFile(`${procRoot}/${pid}/net/${table}`, "utf8").catch(() => "");
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[1]?.endsWith(`:${hexPort}`) && fields[3] === LISTEN && fields[9]) inodes.add(fields[9]);
    }
  }
  return inodes;
}

/** True when one of `pids` holds a socket listening on `port`. */
export async function pidsListenOn(
  pids: readonly number[],
  port: number,
  procRoot = "/proc",
): Promise<boolean> {
  // Read once per network namespace: a pod's processes share one, unless a program entered another.
  const byNetwork = new Map<string, Set<string>>();
  for (const pid of pids) {
    const network = await readlink(`${procRoot}/${pid}/ns/net`).catch(() => `pid ${pid}`);
    let inodes = byNetwork.get(network);
    if (!inodes) {
      inodes = await listeningInodes(port, procRoot, pid);
      byNetwork.set(network, inodes);
    }
    if (inodes.size === 0) continue;
    const fds = await readdir(`${procRoot}/${pid}/fd`).catch(() => [] as string[]);
    for (const fd of fds) {
      const link = await readlink(`${procRoot}/${pid}/fd/${fd}`).catch(() => "");
      const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
      if (inode && inodes.has(inode)) return true;
    }
  }
  return false;
}
