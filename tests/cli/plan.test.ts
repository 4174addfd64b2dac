import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { startHub } from "../../operators/hub/hub.ts";
import { runGit } from "../helpers/git-server.ts";
import { rawJobYaml } from "../helpers/job-yaml.ts";
import { rlark } from "../helpers/rlark-cli.ts";

const cluster = (name: string, runtime = "kubernetes") =>
  `apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: ${name}\nspec:\n  runtime: ${runtime}\n`;

const job = `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: train
spec:
  tasks:
    - name: worker
      head: true
      role: Actor
      agentType: Kubernetes
      kubernetes:
        workload:
          kind: Deployment
          replicas: 2
          template:
            spec:
              containers:
                - name: w
                  image: busybox
                  resources:
                    requests:
                      cpu: "4"
`;

async function repo(t: Test) {
  const dir = await mkdtemp(join(tmpdir(), "rlark-plan-cli-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await runGit(dir, ["init", "--quiet", "--initial-branch=main"]);
  await mkdir(join(dir, "manifests"));
  return dir;
}

t.test("against an empty state everything is created and the plan exits 0", async (t) => {
  const dir = await repo(t);
  await writeFile(join(dir, "manifests/a.yaml"), cluster("a"));
  const run = await rlark(["plan", "manifests"], { cwd: dir });
  t.equal(run.code, 0, run.stderr);
  t.match(run.stdout, /against an empty state: 1 to create, 0 to change, 0 to delete/);
  t.match(run.stdout, /\+ Cluster a \(manifests\/a\.yaml:1\)/);
  t.match(run.stdout, /dry-run unavailable/);
  t.match(run.stdout, /Plan OK\./);
});

t.test(
  "--base compares with a git ref: changed objects show a YAML diff, removed ones are deleted",
  async (t) => {
    const dir = await repo(t);
    await writeFile(join(dir, "manifests/a.yaml"), cluster("a"));
    await writeFile(join(dir, "manifests/b.yaml"), cluster("b"));
    await runGit(dir, ["add", "--all"]);
    await runGit(dir, ["commit", "--quiet", "-m", "base"]);
    await writeFile(join(dir, "manifests/a.yaml"), cluster("a", "process"));
    await rm(join(dir, "manifests/b.yaml"));
    await writeFile(join(dir, "manifests/c.yaml"), cluster("c"));
    const run = await rlark(["plan", "--base", "HEAD", "manifests"], { cwd: dir });
    t.equal(run.code, 0, run.stderr);
    t.match(run.stdout, /against HEAD \([0-9a-f]{7}\): 1 to create, 1 to change, 1 to delete/);
    t.match(
      run.stdout,
      /~ Cluster a \(manifests\/a\.yaml:1\)\n {4}@@ -1,2 \+1,2 @@\n {4} spec:\n {4}- {2}runtime: kubernetes\n {4}\+ {2}runtime: process/,
    );
    t.match(run.stdout, /- Cluster b\n/);
    t.match(run.stdout, /\+ Cluster c/);
    t.equal(
      (await runGit(dir, ["status", "--porcelain"])).includes("b.yaml"),
      true,
      "the work tree is untouched",
    );
  },
);

t.test("an invalid manifest fails the plan: exit 1 with file:line errors", async (t) => {
  const dir = await repo(t);
  await writeFile(join(dir, "manifests/a.yaml"), cluster("a", "warp-drive"));
  const run = await rlark(["plan", "--format", "json", "manifests"], { cwd: dir });
  t.equal(run.code, 1);
  const plan = JSON.parse(run.stdout) as {
    valid: boolean;
    failed: boolean;
    errors: { file: string; line: number }[];
  };
  t.equal(plan.valid, false);
  t.equal(plan.failed, true);
  t.match(plan.errors[0], { file: "manifests/a.yaml", line: 6 });
});

t.test("--hub plans against the hub's live state and its Node reports", async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), "rlark-plan-hub-"));
  const hub = await startHub({ dataDir, http: "127.0.0.1:0" });
  t.teardown(async () => {
    await hub.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  await hub.store.create({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Cluster",
    metadata: { name: "beijing", labels: { "rlark.io/managed-by": "git" } },
    spec: { runtime: "kubernetes" },
    status: { phase: "Online" },
  });
  await hub.store.create({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Cluster",
    metadata: { name: "old", labels: { "rlark.io/managed-by": "git" } },
    spec: { runtime: "kubernetes" },
  });
  await hub.store.create({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Node",
    metadata: { name: "n1", namespace: "agent-beijing" },
    status: {
      phase: "Online",
      allocatable: { cpu: "16", pods: "110" },
      conditions: [{ type: "Ready", status: "True" }],
    },
  });
  const dir = await repo(t);
  await writeFile(join(dir, "manifests/beijing.yaml"), cluster("beijing"));
  await writeFile(join(dir, "manifests/train.yaml"), job);
  const run = await rlark(["plan", "--hub", hub.url, "manifests"], {
    cwd: dir,
    env: { RLARK_TOKEN: hub.adminToken },
  });
  t.equal(run.code, 0, run.stderr);
  t.match(run.stdout, /1 to create, 0 to change, 1 to delete \(1 unchanged\)/);
  t.match(run.stdout, /- Cluster old/);
  t.match(run.stdout, /Job train task worker → beijing \(n1×2\)/);
  t.notMatch(run.stdout + run.stderr, hub.adminToken, "the token is never printed");

  const refused = await rlark(["plan", "--hub", hub.url, "manifests"], {
    cwd: dir,
    env: { RLARK_TOKEN: "wrong" },
  });
  t.equal(refused.code, 2, refused.stderr);
  t.match(refused.stderr, /HTTP 401/);
  t.notMatch(refused.stderr, "wrong");
});

t.test("--help explains the comparison and the exit status", async (t) => {
  const run = await rlark(["plan", "--help"]);
  t.equal(run.code, 0);
  t.match(run.stdout, /--base <ref>/);
  t.match(
    run.stdout,
    /Exit status: 0 the plan is clean, 1 validation or a dry-run failed, 2 usage or I\/O error\./,
  );
});

t.test("an artifact whose SHA-256 does not match fails the plan, as the hub would refuse it", async (t) => {
  const dir = await repo(t);
  await writeFile(join(dir, "manifests/run.sh"), "echo hi\n");
  const raw = (sha256: string) =>
    rawJobYaml({ name: "raw", command: ["sh", "run.sh"], artifact: { url: "run.sh", sha256 } });
  await writeFile(join(dir, "manifests/raw.yaml"), raw("0".repeat(64)));
  const bad = await rlark(["plan", "manifests"], { cwd: dir });
  t.equal(bad.code, 1);
  t.match(
    bad.stdout,
    /manifests\/raw\.yaml:12:16 Job raw \/spec\/tasks\/0\/raw\/artifact\/url: artifact "run\.sh" does not match the declared sha256/,
  );
  t.notMatch(bad.stdout, /[0-9a-f]{64}/, "no digest of the file is printed");
  const { createHash } = await import("node:crypto");
  await writeFile(
    join(dir, "manifests/raw.yaml"),
    raw(createHash("sha256").update("echo hi\n").digest("hex")),
  );
  const good = await rlark(["plan", "manifests"], { cwd: dir });
  t.equal(good.code, 0, good.stdout);
});

t.test(
  "an artifact behind a symlinked folder fails the plan, as the hub refuses it, naming no digest",
  async (t) => {
    const dir = await repo(t);
    const outside = await mkdtemp(join(tmpdir(), "rlark-plan-outside-"));
    t.teardown(() => rm(outside, { recursive: true, force: true }));
    await writeFile(join(outside, "ca.key"), "secret\n");
    await mkdir(join(dir, "manifests/node_modules"));
    await symlink(outside, join(dir, "manifests/node_modules/p"));
    const { createHash } = await import("node:crypto");
    const digest = createHash("sha256").update("secret\n").digest("hex");
    await writeFile(
      join(dir, "manifests/raw.yaml"),
      rawJobYaml({
        name: "raw",
        command: ["./ca.key"],
        artifact: { url: "node_modules/p/ca.key", sha256: digest },
      }),
    );
    const run = await rlark(["plan", "manifests"], { cwd: dir });
    t.equal(run.code, 1);
    t.match(run.stdout, /artifact "node_modules\/p\/ca\.key" goes through the symlink "node_modules\/p"/);
    t.notMatch(run.stdout, outside, "no path outside the repository");
  },
);
