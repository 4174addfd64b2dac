import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import t from "tap";
import { validatePaths } from "../../../operators/source/index.ts";

const root = path.resolve(import.meta.dirname, "../../..");

t.test("the example repository is valid", async (t) => {
  const result = await validatePaths(["examples"], { baseDir: root });
  t.same(result.errors, []);
  t.same(result.warnings, []);
  t.equal(result.valid, true);
  const kinds = new Set(result.objects.map((o) => o.kind));
  t.same([...kinds].sort(), [
    "AccessPolicy",
    "Addon",
    "Cluster",
    "Domain",
    "Job",
    "Node",
    "User",
    "Workflow",
  ]);
});

t.test("each file under examples/invalid fails for the reason its header names", async (t) => {
  const dir = path.join(root, "examples/invalid");
  const files = (await readdir(dir)).filter((f) => f.endsWith(".yaml")).sort();
  t.ok(files.length >= 20, "one file per error class");
  for (const file of files) {
    const text = await readFile(path.join(dir, file), "utf8");
    const expected = /^# expect: (\S+)$/m.exec(text)?.[1];
    t.ok(expected, `${file} declares the rule it shows`);
    const result = await validatePaths([path.join(dir, file)], { baseDir: root });
    t.equal(result.valid, false, `${file} is invalid`);
    t.same(
      [...new Set(result.errors.map((e) => e.rule))],
      [expected],
      `${file} fails for ${expected} and nothing else`,
    );
    for (const error of result.errors) {
      t.equal(error.file, `examples/invalid/${file}`);
      if (!error.rule.startsWith("io/"))
        t.ok(error.line > 0 && error.column > 0, `${file} error has a position`);
    }
  }
});

t.test(
  "validated together, the files under examples/invalid still each fail only for their own reason",
  async (t) => {
    const dir = path.join(root, "examples/invalid");
    const result = await validatePaths([dir], { baseDir: root });
    const byFile = new Map<string, Set<string>>();
    for (const error of result.errors) {
      if (!byFile.has(error.file)) byFile.set(error.file, new Set());
      byFile.get(error.file)?.add(error.rule);
    }
    for (const file of (await readdir(dir)).filter((f) => f.endsWith(".yaml")).sort()) {
      const expected = /^# expect: (\S+)$/m.exec(await readFile(path.join(dir, file), "utf8"))?.[1];
      t.same([...(byFile.get(`examples/invalid/${file}`) ?? [])], [expected], `${file}: only ${expected}`);
    }
    t.same(
      result.errors.filter((e) => e.message.includes(" is also defined at ") && !e.message.includes(e.file)),
      [],
      "no name is declared by two files",
    );
  },
);

t.test("the example Raw job's artifact checksum matches the shipped script", async (t) => {
  const { createHash } = await import("node:crypto");
  const result = await validatePaths(["examples/jobs/cartpole-local.yaml"], { baseDir: root });
  const job = result.objects[0]?.object as {
    spec: { tasks: { raw: { artifact: { url: string; sha256: string } } }[] };
  };
  for (const task of job.spec.tasks) {
    const bytes = await readFile(path.join(root, "examples", task.raw.artifact.url));
    t.equal(createHash("sha256").update(bytes).digest("hex"), task.raw.artifact.sha256);
  }
});

t.test("a summarised check (what rlark validate runs) finds exactly what the full one finds", async (t) => {
  const full = await validatePaths(["examples", "examples/invalid"], { baseDir: root });
  const summarised = await validatePaths(["examples", "examples/invalid"], {
    baseDir: root,
    summarize: true,
  });
  t.ok(full.errors.length > 20);
  t.same(summarised.errors, full.errors);
  const job = summarised.objects.find((o) => o.name === "ppo-cartpole-v1")?.object as {
    metadata: Record<string, unknown>;
    spec: Record<string, unknown>;
  };
  t.same(job.metadata, { name: "ppo-cartpole-v1" }, "a Job keeps its name");
  t.same(Object.keys(job.spec), ["domain"], "and of its spec only what refers to other objects");
});
