// Measuring tools the benchmarks share: CPU time of a process, a Python echo server and connect
// prober (unmodified programs, as the data paths carry them), and a socat reader that counts
// what a port sends without running on the bench's own event loop.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

/** utime + stime of a process, in seconds (clock ticks are 1/100 s on Linux); 0 once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const fields = (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1] ?? "").split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
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
