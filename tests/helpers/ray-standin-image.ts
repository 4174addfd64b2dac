// The image of the Ray-on-Kubernetes test (tests/e2e/real-nodes/ray-two-clusters.test.ts): what
// the agent's Ray scripts need to run unchanged (bash, python3 for ray_check.py, busybox) plus a
// small stand-in for Ray itself, since real Ray is too heavy for the 2-core CI machine (the demo
// hack/demo/ray-k8s-two-clusters runs real Ray). The stand-in takes the same command lines:
//   ray start --head --port P ... [--node-ip-address IP] [--block]  serves a "GCS" on 0.0.0.0:P
//     (GET /join?node=IP registers a node, GET /nodes lists them with the head first) and
//     writes /tmp/ray/ray_current_cluster (IP:P) as Ray does;
//   ray start --address H:P [--node-ip-address IP] [--block]  joins: GET http://H:P/join?node=IP;
// both first bind a listener to the node IP, as Ray's runtime env agent does (and exit when they
// cannot: the address must be on an interface of the pod), writing it to /tmp/ray/agent_address;
// each call appends its argv and RLARK_* environment to /tmp/ray/calls.jsonl. A `ray` Python
// module gives ray_check.py's `nodes` check what it uses (init, is_initialized, nodes), asking
// the GCS at the address in ray_current_cluster, as Ray's address="auto" does.
// Written as one OCI image layout archive for `ctr images import` (like hack/kube/images.ts).
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUSYBOX, copyWithLibraries, writeOciArchive } from "../../hack/kube/images.ts";

export const RAY_STANDIN_IMAGE = "rlark.local/ray-standin:2";

const PYTHON = "/usr/bin/python3.11";
const STDLIB = "/usr/lib/python3.11";

const RAY_CLI = `#!/usr/bin/python3
"""A stand-in for \`ray start\` (tests only): the same options, a tiny HTTP "GCS"."""
import http.server, json, os, socket, sys, threading, time, urllib.parse, urllib.request

STATE = "/tmp/ray"
os.makedirs(STATE, exist_ok=True)
with open(os.path.join(STATE, "calls.jsonl"), "a") as f:
    env = {k: v for k, v in os.environ.items() if k.startswith("RLARK_")}
    f.write(json.dumps({"argv": sys.argv[1:], "env": env}) + "\\n")

def opt(name, default=None):
    for i, a in enumerate(sys.argv):
        if a == name and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return default

if sys.argv[1:2] != ["start"]:
    sys.exit("ray stand-in: only 'ray start' is known")
block = "--block" in sys.argv
node_ip = opt("--node-ip-address", "127.0.0.1")

# Real Ray binds the node IP (its runtime env agent listens on it) and fails without it on an
# interface of the pod (OSError: [Errno 99] Cannot assign requested address): so does this.
agent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    agent.bind((node_ip, 0))
except OSError as e:
    sys.exit(f"ray stand-in: cannot bind the node IP {node_ip}: {e}")
agent.listen()
with open(os.path.join(STATE, "agent_address"), "w") as f:
    f.write("%s:%d" % agent.getsockname())

if "--head" in sys.argv:
    port = int(opt("--port", "6379"))
    nodes = [node_ip]

    class Gcs(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            url = urllib.parse.urlparse(self.path)
            if url.path == "/join":
                node = urllib.parse.parse_qs(url.query).get("node", ["?"])[0]
                if node not in nodes:
                    nodes.append(node)
                with open(os.path.join(STATE, "joins.jsonl"), "a") as f:
                    f.write(json.dumps({"node": node, "peer": self.client_address[0]}) + "\\n")
            body = json.dumps({"head": nodes[0], "nodes": nodes}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("0.0.0.0", port), Gcs)
    with open(os.path.join(STATE, "ray_current_cluster"), "w") as f:
        f.write(f"{node_ip}:{port}")
    print(f"ray stand-in: head at {node_ip}:{port}", flush=True)
    if block:
        server.serve_forever()
    if os.fork() == 0:
        os.setsid()
        server.serve_forever()
    sys.exit(0)

address = opt("--address")
with urllib.request.urlopen(f"http://{address}/join?node={urllib.parse.quote(node_ip)}", timeout=10) as r:
    print(f"ray stand-in: joined {address} as {node_ip}: {r.read().decode()}", flush=True)
while block:
    time.sleep(3600)
`;

const RAY_MODULE = `"""A stand-in for the ray module (tests only): what ray_check.py's nodes check calls."""
import json, os, urllib.request

_address = None

def is_initialized():
    return _address is not None

def init(address=None, logging_level=None, _node_ip_address=None, **_):
    global _address
    if address in (None, "auto"):
        with open("/tmp/ray/ray_current_cluster") as f:
            address = f.read().strip()
    _address = address

def nodes():
    with urllib.request.urlopen(f"http://{_address}/nodes", timeout=10) as r:
        return [{"NodeManagerAddress": n, "Alive": True} for n in json.load(r)["nodes"]]
`;

/**
 * What the agent's Ray scripts need in `rootfs`: busybox's applets in /bin, bash, /usr/bin/env,
 * Debian's python3.11 with its standard library (no tests, caches or installed packages), root in
 * /etc/passwd, a sticky /tmp.
 */
export function scriptsRootfs(rootfs: string): void {
  for (const d of ["bin", "etc", "tmp", "proc", "sys", "dev", "root", "usr/local/bin", "usr/bin"])
    mkdirSync(join(rootfs, d), { recursive: true });
  execFileSync("chmod", ["1777", join(rootfs, "tmp")]);
  execFileSync("cp", [BUSYBOX, join(rootfs, "bin/busybox")]);
  const applets = execFileSync(BUSYBOX, ["--list"], { encoding: "utf8" }).split("\n").filter(Boolean);
  for (const applet of applets)
    if (applet !== "busybox" && applet !== "bash") symlinkSync("busybox", join(rootfs, "bin", applet));
  copyWithLibraries("/bin/bash", rootfs);
  copyWithLibraries(PYTHON, rootfs);
  symlinkSync("python3.11", join(rootfs, "usr/bin/python3"));
  symlinkSync("/bin/busybox", join(rootfs, "usr/bin/env")); // the scripts' #!/usr/bin/env bash
  cpSync(STDLIB, join(rootfs, STDLIB), {
    recursive: true,
    dereference: true,
    filter: (src) =>
      !/\/(test|__pycache__|dist-packages|site-packages|idlelib|tkinter|ensurepip)(\/|$)/.test(
        src.slice(STDLIB.length),
      ),
  });
  writeFileSync(join(rootfs, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n");
  writeFileSync(join(rootfs, "etc/group"), "root:x:0:\n");
}

/**
 * `rootfs` as a one-layer image named `name` in an OCI image layout archive in `workDir`, for
 * `ctr images import`; removes `rootfs`. Returns the archive's path.
 */
export function writeImageArchive(rootfs: string, workDir: string, name: string, env: string[]): string {
  mkdirSync(workDir, { recursive: true });
  return writeOciArchive(rootfs, workDir, `${name.replace(/[^a-z0-9.-]+/g, "_")}.oci.tar`, [
    { name, cmd: ["/bin/sh"], env },
  ]);
}

/** Builds the stand-in's archive in `workDir` (created; left with only the archive); returns its path. */
export function buildRayStandinImage(workDir: string): string {
  const rootfs = join(workDir, "rootfs");
  scriptsRootfs(rootfs);
  writeFileSync(join(rootfs, "usr/local/bin/ray"), RAY_CLI, { mode: 0o755 });
  mkdirSync(join(rootfs, "usr/local/lib/python3.11/dist-packages/ray"), { recursive: true });
  writeFileSync(join(rootfs, "usr/local/lib/python3.11/dist-packages/ray/__init__.py"), RAY_MODULE);
  return writeImageArchive(rootfs, workDir, RAY_STANDIN_IMAGE, [
    "PATH=/usr/local/bin:/usr/bin:/bin",
    "PYTHONPATH=/usr/local/lib/python3.11/dist-packages",
  ]);
}
