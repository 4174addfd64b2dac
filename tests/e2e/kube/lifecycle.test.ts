// hack/kube/up and down on a fleet of their own (1 cluster x 1 node, in a temporary folder):
// up is idempotent and cleans up after a crash; test runs hold the fleet and the last one, or the
// next run after they died, stops it; down stops exactly the recorded PIDs.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { repoRoot } from "../../../hack/kube/paths.ts";

interface ProcRecord {
  name: string;
  pid: number;
  start: string;
}

const dir = mkdtempSync(join(tmpdir(), "rlark-fleet-"));
const env = { ...process.env, RLARK_FLEET_DIR: dir };

function run(script: "up" | "down", ...args: string[]): { status: number | null; out: string } {
  const r = spawnSync("bash", [join(repoRoot, "hack/kube", script), ...args], { env, encoding: "utf8" });
  const out = `${r.stdout}${r.stderr}`;
  if (r.status !== 0) t.comment(`hack/kube/${script} ${args.join(" ")} exited ${r.status}:\n${out}`);
  return { status: r.status, out };
}

const processes = (): ProcRecord[] =>
  (JSON.parse(readFileSync(join(dir, "state.json"), "utf8")) as { processes: ProcRecord[] }).processes;

/** Alive and still the same process (a recycled PID has another start time). */
function alive(p: ProcRecord): boolean {
  try {
    const stat = readFileSync(`/proc/${p.pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[19] === p.start && fields[0] !== "Z";
  } catch {
    return false;
  }
}

t.teardown(() => {
  if (existsSync(join(dir, "state.json"))) run("down");
  rmSync(dir, { recursive: true, force: true });
  rmSync(`${dir}.lock`, { force: true });
});

const sleeper = () => spawn("sleep", ["300"], { stdio: "ignore" });
const shape = ["--clusters", "1", "--nodes", "1"];
// stands in for a tap runner that holds the fleet through both tests
const runA = sleeper();
t.teardown(() => runA.kill());

t.test("up is idempotent and recovers from a crash; a fleet started by hand stays up", async (t) => {
  const first = run("up", ...shape);
  t.equal(first.status, 0, "up succeeds");
  const started = processes();
  t.same(
    started.map((p) => p.name).sort(),
    [
      "etcd",
      "fleet-1-kube-apiserver",
      "fleet-1-kube-controller-manager",
      "fleet-1-kube-scheduler",
      "fleet-1-kwok",
    ],
    "etcd and the four processes of the cluster",
  );
  t.ok(started.every(alive), "all recorded processes run");
  const clusters = JSON.parse(readFileSync(join(dir, "clusters.json"), "utf8")) as { kubeconfig: string }[];
  t.equal(clusters.length, 1);
  t.ok(existsSync(clusters[0]!.kubeconfig), "the kubeconfig exists");

  const again = run("up", ...shape);
  t.equal(again.status, 0);
  t.match(again.out, /already up/, "a second up reuses the running fleet");
  t.same(
    processes().map((p) => p.pid),
    started.map((p) => p.pid),
    "with the same processes",
  );

  // a test run finishing does not stop a fleet started by hand
  t.match(run("down", "--holder", String(runA.pid)).out, /started by hand: left running/);
  t.ok(started.every(alive), "the fleet started by hand still runs");

  // crash: the apiserver dies behind the fleet's back; the next up (a test run's) starts afresh
  const apiserver = started.find((p) => p.name.endsWith("kube-apiserver"))!;
  process.kill(apiserver.pid, "SIGKILL");
  const recovered = run("up", ...shape, "--holder", String(runA.pid));
  t.equal(recovered.status, 0, "up after a crash succeeds");
  t.match(recovered.out, /cleaning up an earlier fleet/);
  t.ok(
    started.every((p) => !alive(p)),
    "every process of the crashed fleet was stopped",
  );
  t.ok(processes().every(alive), "a fresh fleet runs");
});

t.test("test runs share a fleet; it stops when the last is done or has died, exactly its PIDs", async (t) => {
  const runB = sleeper();
  t.teardown(() => runB.kill());
  const started = processes();
  t.match(
    run("up", ...shape, "--holder", String(runB.pid)).out,
    /already up.*used by 2 test runs/,
    "B joins",
  );

  t.match(
    run("down", "--holder", String(runA.pid)).out,
    /still used by 1 test runs: left running/,
    "A is done",
  );
  t.ok(started.every(alive), "the fleet still runs for B");
  t.match(run("down", "--if-orphaned").out, /still used by 1/, "it is no orphan while B lives");

  // a bystander that looks like a fleet process (named kube-apiserver) but is not one
  const bystander = spawn("bash", ["-c", "exec -a kube-apiserver sleep 300"], { stdio: "ignore" });
  t.teardown(() => bystander.kill());

  // run B crashes without its "after"; the next run's "before" stops the orphaned fleet
  runB.kill("SIGKILL");
  await new Promise((r) => runB.once("exit", r));
  const orphan = run("down", "--if-orphaned");
  t.equal(orphan.status, 0);
  t.match(orphan.out, /stopped and removed/, "the orphaned fleet is stopped");
  t.ok(
    started.every((p) => !alive(p)),
    "every recorded process was stopped",
  );
  t.notOk(existsSync(dir), "and its state removed");
  t.doesNotThrow(() => process.kill(bystander.pid!, 0), "an unrelated process still runs");

  const downAgain = run("down");
  t.equal(downAgain.status, 0, "down without a fleet is a no-op");
  t.match(downAgain.out, /nothing to stop/);
});
