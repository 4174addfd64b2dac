// Measuring tools the benchmarks share: CPU time of a process and of the whole machine, a Python echo server and connect
// prober (unmodified programs, as the data paths carry them), and a socat reader that counts
// what a port sends without running on the bench's own event loop.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import path from "node:path";
import { freePort } from "../../tests/helpers/free-port.ts";

/** utime + stime of a process, in seconds (clock ticks are 1/100 s on Linux); 0 once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const fields = (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1] ?? "").split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/**
 * CPU seconds of a process and of every child it has reaped (utime, stime, cutime, cstime): a
 * daemon's figure that includes the per-connection processes it forked, once they have exited
 * (untilNoChildren).
 */
export function cpuSecondsWithReaped(pid: number): number {
  try {
    const fields = (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1] ?? "").split(" ");
    return fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0) / 100;
  } catch {
    return 0;
  }
}

/** Waits (at most 10 s) until a process has no children left: their CPU is then in its own. */
export async function untilNoChildren(pid: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      if (readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim() === "") return;
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Busy CPU seconds of the whole machine since boot (every core's user, nice, system, irq and
 * softirq ticks of /proc/stat; idle and iowait left out). The difference over a transfer is what
 * every process on the path spent, clients and servers alike, and whatever else ran.
 */
export function machineBusySeconds(): number {
  const fields = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1);
  const [user, nice, system, , , irq, softirq] = fields.map(Number);
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0)) / 100;
}

/** A threaded Python echo server on host:port. */
export function echoServerPython(host: string, port: number): string {
  return `import socket,threading
s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(("${host}",${port}));s.listen(512)
def serve(c):
  with c:
    while True:
      d=c.recv(65536)
      if not d: return
      c.sendall(d)
while True:
  c,_=s.accept();threading.Thread(target=serve,args=(c,),daemon=True).start()`;
}

/** Python, args `ip port n`: n connects each with a 1-byte echo; prints p50 and p99 in ms. */
export const CONNECT_PROBE = `import socket,sys,time
ip,port,n=sys.argv[1],int(sys.argv[2]),int(sys.argv[3])
ts=[]
for i in range(n):
  t=time.perf_counter();c=socket.create_connection((ip,port));c.setsockopt(socket.IPPROTO_TCP,socket.TCP_NODELAY,1);c.sendall(b"x");c.recv(1);ts.append((time.perf_counter()-t)*1000);c.close()
ts.sort();print(ts[len(ts)//2],ts[min(len(ts)-1,int(len(ts)*0.99))])`;

/** Reads everything from a local port in a socat process; resolves with seconds and bytes. */
export function socatSink(port: number): Promise<{ seconds: number; bytes: number }> {
  const start = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", `socat -u TCP:127.0.0.1:${port} STDOUT 2>/dev/null | wc -c`], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.once("error", reject);
    child.once("exit", () =>
      resolve({ seconds: Number(process.hrtime.bigint() - start) / 1e9, bytes: Number(out.trim()) }),
    );
  });
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** Waits until 127.0.0.1:port accepts connections, for at most two minutes. */
export async function untilListening(port: number, what: string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (await listening(port)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`never listened: ${what} on port ${port}`);
}

/** The network benches' sshd: root by key, TCP forwarding, the cipher both ends run fastest. */
export const SSHD_FORWARDING = [
  "PasswordAuthentication no",
  "PermitRootLogin prohibit-password",
  "AllowTcpForwarding yes",
  "Ciphers aes128-gcm@openssh.com",
];

/**
 * sshd's files in `dir`, for an OpenSSH baseline: a host key, authorized_keys holding
 * `authorizedKey`, and sshd_config listening on `listen` (host:port) with `extra` lines. Returns the
 * config's path; sshd needs /run/sshd, made here too.
 */
export function writeSshdConfig(dir: string, listen: string, authorizedKey: string, extra: string[]): string {
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, "sshd_host")]);
  writeFileSync(path.join(dir, "authorized_keys"), `${authorizedKey.trim()}\n`);
  const config = path.join(dir, "sshd_config");
  writeFileSync(
    config,
    [
      `ListenAddress ${listen}`,
      `HostKey ${path.join(dir, "sshd_host")}`,
      `AuthorizedKeysFile ${path.join(dir, "authorized_keys")}`,
      "StrictModes no",
      "UsePAM no",
      "PidFile none",
      ...extra,
    ].join("\n"),
  );
  mkdirSync("/run/sshd", { recursive: true });
  return config;
}

/**
 * Debian's sshd on 127.0.0.1, the OpenSSH baseline: its host key, config and authorized key in
 * `dir`; resolves once it listens. SFTP is sshd's own internal-sftp: an external sftp-server is
 * started through the login shell, and root's shell rc on this machine once took 60 s (pyenv
 * init), which the figure counted.
 */
export async function startSshd(
  dir: string,
  authorizedKey: string,
): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const config = writeSshdConfig(dir, `127.0.0.1:${port}`, authorizedKey, ["Subsystem sftp internal-sftp"]);
  const child = spawn("/usr/sbin/sshd", ["-D", "-e", "-f", config], { stdio: "ignore" });
  await untilListening(port, "sshd");
  return { port, child };
}
