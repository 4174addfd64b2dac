// `rlark status` as a process against a real hub on real git: a Pending Job says why.
import { spawn } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import type { Job } from "../../operators/api/generated/job.ts";
import { startHub } from "../../operators/hub/hub.ts";
import { silentLogger } from "../../operators/lib/controller/index.ts";
import { createGitServer } from "../helpers/git-server.ts";
import { waitFor } from "../helpers/wait-for.ts";

const cli = path.resolve(import.meta.dirname, "../../operators/cli/main.ts");

function rlark(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk;
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const job = `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: train
spec:
  tasks:
    - name: actor
      role: Actor
      agentType: Raw
      raw: { command: ["true"] }
`;

t.test("a Pending Job's row says why it is pending", async (t) => {
  const git = await createGitServer();
  t.teardown(() => git.close());
  await git.commit({ "jobs/train.yaml": job });
  const hub = await startHub({
    dataDir: await mkdtemp(path.join(tmpdir(), "rlark-status-")),
    http: "127.0.0.1:0",
    ssh: "127.0.0.1:0",
    repo: git.fileUrl,
    branch: "main",
    intervalMs: 100,
    logger: silentLogger,
  });
  t.teardown(() => hub.stop());
  const message = await waitFor("the Job unschedulable", async () => {
    const stored = await hub.store.get<Job>("Job", undefined, "train");
    const conditions = (stored?.status?.conditions ?? []) as {
      type: string;
      status: string;
      message?: string;
    }[];
    return conditions.find((c) => c.type === "Scheduled" && c.status === "False")?.message;
  });
  const run = await rlark(["status", "--hub", hub.url, "--token", hub.adminToken]);
  t.equal(run.code, 0, run.stderr);
  const row = run.stdout.split("\n").find((line) => line.startsWith("train "));
  t.match(row, /^train +Pending +1 +1 +/);
  t.ok(row?.endsWith(message), `the row ends with the condition's message (${row})`);
  t.match(run.stdout, /NAME +PHASE +RUN +TASKS +MESSAGE/);
});
