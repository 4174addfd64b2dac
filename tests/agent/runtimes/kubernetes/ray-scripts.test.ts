// The Ray scripts run for real where they can without Ray: bash parses both shell scripts, and
// ray_check.py waits for a head's GCS port exactly as a worker does before it joins.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import {
  RAY_CHECK_PY,
  RAY_HEAD_SH,
  RAY_WORKER_SH,
} from "../../../../operators/agent/runtimes/kubernetes/workloads/ray-scripts.ts";

const dir = mkdtempSync(join(tmpdir(), "rlark-ray-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const check = join(dir, "ray_check.py");
writeFileSync(check, RAY_CHECK_PY);
const python = spawnSync("python3", ["--version"]).status === 0;

function run(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn("python3", [check, ...args], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.on("close", (code) => resolve({ code, stderr }));
  });
}

const listen = (server: Server, port = 0): Promise<number> =>
  new Promise((resolve) => {
    server.listen(port, "127.0.0.1", () => {
      const addr = server.address();
      resolve(typeof addr === "object" && addr ? addr.port : 0);
    });
  });

t.test("both shell scripts are valid bash", async (t) => {
  for (const [name, text] of [
    ["ray_head.sh", RAY_HEAD_SH],
    ["ray_worker.sh", RAY_WORKER_SH],
  ] as const) {
    const file = join(dir, name);
    writeFileSync(file, text);
    const result = spawnSync("bash", ["-n", file], { encoding: "utf8" });
    t.equal(result.status, 0, `${name} parses: ${result.stderr}`);
  }
});

t.test("ray_check.py returns once the head's port answers", { skip: !python && "no python3" }, async (t) => {
  const probe = createServer();
  const port = await listen(probe);
  await new Promise((r) => probe.close(r));
  // the head comes up while the worker is already waiting
  const waiting = run(["address", `127.0.0.1:${port}`, "--timeout", "30", "--interval", "0.1"]);
  // a GCS keeps the connection open, waiting for its client to speak
  const sockets: Socket[] = [];
  const head = createServer((socket) => sockets.push(socket));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    head.close();
  });
  // A refused probe leaves no trace to wait for, so the worker gets a few of its 0.1 s probes before
  // the head listens. Not a race: were the head up before the first probe, the test would still
  // pass, only without showing the wait.
  await new Promise((r) => setTimeout(r, 300));
  await listen(head, port);
  const { code, stderr } = await waiting;
  t.equal(code, 0, `the worker goes on (${stderr})`);
});

t.test(
  "ray_check.py fails after its timeout when no head answers",
  { skip: !python && "no python3" },
  async (t) => {
    const probe = createServer();
    const port = await listen(probe);
    await new Promise((r) => probe.close(r));
    const { code, stderr } = await run([
      "address",
      `127.0.0.1:${port}`,
      "--timeout",
      "0.5",
      "--interval",
      "0.1",
    ]);
    t.equal(code, 1, "the pod fails instead of hanging");
    t.match(stderr, /not ready after/);
  },
);

t.test(
  "ray_check.py does not take a connection closed at once (a Domain sidecar's refusal) for the head",
  { skip: !python && "no python3" },
  async (t) => {
    // in a Domain the pod's sidecar accepts every connection to a virtual IP and closes it when
    // the far end cannot be reached
    const sidecar = createServer((socket) => socket.end());
    t.teardown(() => sidecar.close());
    const port = await listen(sidecar);
    const { code, stderr } = await run([
      "address",
      `127.0.0.1:${port}`,
      "--timeout",
      "1",
      "--interval",
      "0.1",
    ]);
    t.equal(code, 1, "still waiting for the head when the timeout passes");
    t.match(stderr, /not ready after/);
  },
);

t.test(
  "ray_check.py file prints a file's value once it has one",
  { skip: !python && "no python3" },
  async (t) => {
    const file = join(dir, "head_address");
    writeFileSync(file, "");
    const child = spawn("python3", [check, "file", file, "--timeout", "30", "--interval", "0.1"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
    // empty for a moment (a ConfigMap key the agent has not filled yet), then filled
    await new Promise((r) => setTimeout(r, 300));
    writeFileSync(file, "10.77.0.9:6379\n");
    t.equal(await closed, 0);
    t.equal(stdout, "10.77.0.9:6379\n", "the value alone, for $(...)");
    const missing = await run(["file", join(dir, "nothing"), "--timeout", "0.3", "--interval", "0.1"]);
    t.equal(missing.code, 1, "a file that never comes fails the pod");
  },
);
