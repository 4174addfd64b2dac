// `rlark validate` streams the repository: each object is checked as it is read and only what the
// end-of-snapshot rules need is kept (api/validate/compact.ts). These check that findings deep in
// a large repository and across files still name the file, the line and the field.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t, { type Test } from "tap";
import { stringify } from "yaml";
import { validatePaths } from "../../operators/source/index.ts";

const API = "rlinf.io/v1alpha1";

function job(name: string, extra: Record<string, unknown> = {}) {
  return {
    apiVersion: API,
    kind: "Job",
    metadata: { name },
    spec: {
      tasks: [{ name: "env", role: "Env", agentType: "Raw", raw: { command: ["python", "env.py"] } }],
      ...extra,
    },
  };
}

async function repository(t: Test, files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-validate-stream-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (const [file, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), text);
  }
  return dir;
}

t.test("an error in the 5,000th document names its file, line and field", async (t) => {
  const files: Record<string, string> = {};
  // 4,999 valid Jobs, ten to a file, and a 5,000th whose second task has a second head.
  for (let i = 0; i < 4999; i++) {
    const file = `jobs/batch-${String(Math.floor(i / 10)).padStart(4, "0")}.yaml`;
    files[file] = `${files[file] ?? ""}---\n${stringify(job(`job-${i}`))}`;
  }
  const last = job("job-4999");
  last.spec.tasks = ["a", "b"].map((name) => ({
    ...structuredClone(last.spec.tasks[0]),
    name,
    head: true,
  })) as never;
  files["jobs/zz-last.yaml"] = `# the 5,000th\n${stringify(last)}`;
  const dir = await repository(t, files);

  const result = await validatePaths([dir], { baseDir: dir, summarize: true });
  t.equal(result.documents, 5000);
  t.same(
    result.errors.map((e) => [e.file, e.line, e.path, e.rule, e.name]),
    [["jobs/zz-last.yaml", 23, "/spec/tasks/1/head", "cross/single-head", "job-4999"]],
  );
  t.same(result.objects.find((o) => o.name === "job-4999")?.object, {
    apiVersion: API,
    kind: "Job",
    metadata: { name: "job-4999" },
    spec: {},
  });
});

t.test("a name declared in two files is reported at the later one, naming the first", async (t) => {
  const dir = await repository(t, {
    "a/first.yaml": stringify(job("twice")),
    "b/other.yaml": `${stringify(job("once"))}---\n# comment\n${stringify(job("twice"))}`,
  });
  const result = await validatePaths([dir], { baseDir: dir, summarize: true });
  t.same(
    result.errors.map((e) => [e.file, e.line, e.path, e.rule, e.message]),
    [
      [
        "b/other.yaml",
        19,
        "/metadata/name",
        "cross/unique-name",
        'Job "twice" is also defined at a/first.yaml:1',
      ],
    ],
  );
});

t.test("a reference to a missing Domain is found after every file is read, with its line", async (t) => {
  // The Domain comes after the Job in file order; the one Job naming a missing Domain is reported.
  const dir = await repository(t, {
    "a-jobs.yaml": `${stringify(job("ok", { domain: "net" }))}---\n${stringify(job("lost", { domain: "nett" }))}`,
    "z-domains.yaml": stringify({
      apiVersion: API,
      kind: "Domain",
      metadata: { name: "net" },
      spec: { cidr: "10.1.0.0/24" },
    }),
  });
  const result = await validatePaths([dir], { baseDir: dir, summarize: true });
  t.same(
    result.errors.map((e) => [e.file, e.line, e.path, e.rule, e.name]),
    [["a-jobs.yaml", 29, "/spec/domain", "cross/domain-exists", "lost"]],
  );
});
