import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { staleFiles } from "../../hack/codegen/check.ts";
import type { ApiObject, Job, TaskTemplate } from "../../operators/api/index.ts";

const root = new URL("../../", import.meta.url).pathname;
const check = join(root, "hack/codegen/check.ts");

t.test("the committed types and CRDs match what the schemas generate", async (t) => {
  const cwd = process.cwd();
  process.chdir(root);
  try {
    t.same(staleFiles(), []);
  } finally {
    process.chdir(cwd);
  }
});

t.test("check.ts exits 1 naming a stale, a missing and a stray generated file", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "rlark-codegen-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(join(root, "operators/api/generated"), join(dir, "operators/api/generated"), { recursive: true });
  cpSync(join(root, "schemas/crds"), join(dir, "schemas/crds"), { recursive: true });
  writeFileSync(join(dir, "operators/api/generated/job.ts"), "// edited by hand\n");
  rmSync(join(dir, "schemas/crds/pods.rlinf.io.yaml"));
  writeFileSync(join(dir, "schemas/crds/old.rlinf.io.yaml"), "");
  const run = spawnSync(process.execPath, [check], { cwd: dir, encoding: "utf8" });
  t.equal(run.status, 1);
  t.match(run.stderr, "operators/api/generated/job.ts");
  t.match(run.stderr, "schemas/crds/pods.rlinf.io.yaml (missing)");
  t.match(run.stderr, "schemas/crds/old.rlinf.io.yaml (not generated)");
  t.notMatch(run.stderr, "generated/task.ts", "fresh files are not named");
});

t.test("the object metadata lib/ shares is generated once, and api re-exports it", async (t) => {
  const read = (path: string) => readFileSync(join(root, path), "utf8");
  const lib = read("operators/lib/object-meta.ts");
  const common = read("operators/api/generated/common.ts");
  for (const name of ["ObjectMeta", "OwnerReference", "Labels"]) {
    t.match(lib, `export interface ${name} `, `lib/object-meta.ts declares ${name}`);
    t.notMatch(common, `export interface ${name} `, `api's common.ts does not declare ${name} again`);
  }
  t.match(common, /export type \{[^}]*\bObjectMeta\b[^}]*\} from "\.\.\/\.\.\/lib\/object-meta\.ts"/);
  t.notMatch(
    read("operators/lib/kube-object.ts"),
    /resourceVersion\?:/,
    "kube-object.ts writes no metadata field by hand",
  );
});

t.test("check.ts exits 0 on a fresh tree", async (t) => {
  const run = spawnSync(process.execPath, [check], { cwd: root, encoding: "utf8" });
  t.equal(run.status, 0, run.stderr);
});

t.test("the generated types describe the objects the schemas accept", async (t) => {
  // Compiles only if the generated types have these shapes; the runtime check guards the test.
  const task: TaskTemplate = {
    name: "actor",
    role: "Actor",
    agentType: "Kubernetes",
    kubernetes: {
      workload: { kind: "Deployment", template: { spec: { containers: [{ name: "a", image: "b" }] } } },
    },
  };
  const job: Job = {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Job",
    metadata: { name: "j" },
    spec: { tasks: [task] },
  };
  const object: ApiObject = job;
  t.equal(object.kind, "Job");
});
