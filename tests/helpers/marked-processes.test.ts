// pidsMarked finds a marked program even when its arguments name "node", and leaves out Node
// processes that carry the marker.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import t from "tap";
import { pidsMarked } from "./marked-processes.ts";
import { waitFor } from "./wait-for.ts";

t.test("a program with --node-ip-address is marked; a Node process with the marker is not", async (t) => {
  const marker = `rlark-marked-${randomBytes(4).toString("hex")}`;
  const children: ChildProcess[] = [];
  t.teardown(() => {
    for (const child of children) child.kill("SIGKILL");
  });
  const start = (cmd: string, args: string[]) => {
    const child = spawn(cmd, args, { stdio: "ignore" });
    children.push(child);
    return child;
  };
  const ray = start("sh", ["-c", `sleep 600 # ray start --node-ip-address=10.0.0.1 ${marker}`]);
  const nodeProcess = start(process.execPath, ["-e", "setTimeout(() => {}, 600_000)", marker]);
  await waitFor("both processes running", async () => ray.pid !== undefined && nodeProcess.pid !== undefined);
  const found = await waitFor("the marked program found", async () => {
    const pids = await pidsMarked(marker);
    return pids.includes(ray.pid as number) ? pids : undefined;
  });
  t.notOk(found.includes(nodeProcess.pid as number), "the Node process is left out");
});
