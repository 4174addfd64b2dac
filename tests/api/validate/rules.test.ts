import fc from "fast-check";
import t from "tap";
import { validateDocuments } from "../../../operators/api/validate/index.ts";
import { cidrsOverlap, parseCidr } from "../../../operators/api/validate/rules/domain-cidrs.ts";
import { findCycle } from "../../../operators/api/validate/rules/workflow-dag.ts";
import { loadAddonCatalog } from "../../../operators/source/addon-catalog.ts";
import { parseManifestText } from "../../../operators/source/manifest-parser.ts";

const catalog = loadAddonCatalog();

function validate(text: string, strict = false) {
  const parsed = parseManifestText(text, "repo.yaml");
  return validateDocuments(parsed.documents, parsed.diagnostics, { strict, catalog });
}

t.test(
  "an error names file, line, column, kind, name, JSON pointer, rule and a readable message",
  async (t) => {
    const result = validate(`apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: ppo-cartpole-v1
spec:
  tasks:
    - name: actor
      role: Actor
      agentType: Raw
      raw: { command: ["true"] }
    - name: rollout
      role: Rollout
      agentType: Kubernetes
      kubernetes:
        workload:
          kind: Deploymnet
          template: { spec: { containers: [{ name: c, image: i }] } }
`);
    t.same(result.errors, [
      {
        file: "repo.yaml",
        line: 16,
        column: 17,
        kind: "Job",
        name: "ppo-cartpole-v1",
        path: "/spec/tasks/1/kubernetes/workload/kind",
        rule: "schema/enum",
        message: 'must be one of Deployment, StatefulSet, DaemonSet, Job (got "Deploymnet")',
      },
    ]);
  },
);

t.test("documents of other tools are skipped with a warning, and are errors under --strict", async (t) => {
  const text = "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: c }\n---\nreplicaCount: 3\n";
  const lenient = validate(text);
  t.equal(lenient.valid, true);
  t.same(
    lenient.warnings.map((w) => w.rule),
    ["foreign/skipped", "foreign/skipped"],
  );
  const strict = validate(text, true);
  t.equal(strict.valid, false);
  t.same(
    strict.errors.map((e) => e.rule),
    ["strict/foreign-document", "strict/foreign-document"],
  );
  t.same(
    lenient.warnings.map((w) => w.message),
    ["ConfigMap of v1 is not an RLark object; skipped", "has no apiVersion; not an RLark object, skipped"],
  );
  t.same(
    strict.errors.map((e) => e.message),
    [
      "ConfigMap of v1 is not an RLark object; --strict allows only rlinf.io/v1alpha1 documents",
      "has no apiVersion; not an RLark object; --strict allows only rlinf.io/v1alpha1 documents",
    ],
    "an error does not say the document was skipped",
  );
});

t.test("errors about the kind point at the kind line, not at the document's start", async (t) => {
  const unknown = validate("apiVersion: rlinf.io/v1alpha1\nmetadata: { name: w }\nkind: Workflw\n");
  t.match(unknown.errors, [{ rule: "schema/unknown-kind", path: "/kind", line: 3, column: 7 }]);
  const task = validate("apiVersion: rlinf.io/v1alpha1\n\nkind: Task\nmetadata: { name: t }\n");
  t.match(task.errors, [{ rule: "cross/not-from-git", path: "/kind", line: 3, column: 7 }]);
  const version = validate("# a comment\nkind: Job\napiVersion: rlinf.io/v1beta1\nmetadata: { name: j }\n");
  t.match(version.errors, [{ rule: "schema/api-version", path: "/apiVersion", line: 3, column: 13 }]);
});

t.test("an unserved rlinf.io version is an error, not a foreign document", async (t) => {
  const result = validate("apiVersion: rlinf.io/v1beta1\nkind: Job\nmetadata: { name: j }\n");
  t.match(result.errors, [{ rule: "schema/api-version", message: /use rlinf\.io\/v1alpha1/ }]);
});

t.test("Workflow templates get the Job rules too", async (t) => {
  const result = validate(`apiVersion: rlinf.io/v1alpha1
kind: Workflow
metadata: { name: wf }
spec:
  jobs:
    - name: train
      template:
        domain: nowhere
        tasks: [{ name: t, role: Actor, agentType: Raw, raw: { command: ["true"] } }]
`);
  t.match(result.errors, [{ rule: "cross/domain-exists", path: "/spec/jobs/0/template/domain", line: 8 }]);
});

t.test("cycles are found in long chains without recursion and named from their smallest job", async (t) => {
  const edges = new Map<string, string[]>();
  for (let i = 0; i < 50_000; i++) edges.set(`j${i}`, i === 0 ? [] : [`j${i - 1}`]);
  t.equal(findCycle(edges), undefined, "a 50,000-long chain is no cycle");
  edges.set("j0", ["j49999"]);
  const cycle = findCycle(edges);
  t.equal(cycle?.length, 50_001);
  t.equal(cycle?.[0], "j0");
  t.same(findCycle(new Map([["a", ["a"]]])), ["a", "a"], "a job that depends on itself");
});

t.test("CIDR overlap is symmetric and exact at the edges", async (t) => {
  const cidr = (s: string) => parseCidr(s) ?? t.fail(`parse ${s}`);
  const a = parseCidr("10.0.0.0/24");
  const b = parseCidr("10.0.1.0/24");
  const c = parseCidr("10.0.0.128/25");
  if (!a || !b || !c) throw new Error("parse");
  t.notOk(cidrsOverlap(a, b));
  t.ok(cidrsOverlap(a, c) && cidrsOverlap(c, a));
  t.equal(parseCidr("10.0.0.0/33"), undefined);
  t.equal(parseCidr("300.0.0.0/8"), undefined);
  t.ok(cidr);
});

t.test("a few thousand malformed documents each end in a clean error, never a throw", async (t) => {
  const yamlish = fc.oneof(
    fc.string({ maxLength: 200 }),
    fc.json({ maxDepth: 6 }),
    fc
      .array(
        fc.constantFrom(
          "apiVersion: rlinf.io/v1alpha1",
          "kind: Job",
          "kind: Workflow",
          "kind: Domain",
          "- ",
          "  ",
          ": ",
          "{",
          "[",
          "&a",
          "*a",
          "!!binary",
          "---",
          "\n",
          "spec:",
          "tasks:",
          "  - name: x",
          "cidr: 10.0.0.0/24",
          "\t",
          "'",
          '"',
          "#",
        ),
      )
      .map((parts) => parts.join("")),
    fc
      .record({
        kind: fc.constantFrom("Job", "Workflow", "Domain", "Addon", "Cluster", "Node", "User"),
        metadata: fc.record({
          name: fc.string({ maxLength: 70 }),
          namespace: fc.option(fc.string(), { nil: undefined }),
        }),
        spec: fc.anything({ maxDepth: 4 }),
      })
      .map((o) => JSON.stringify({ apiVersion: "rlinf.io/v1alpha1", ...o })),
  );
  let invalid = 0;
  fc.assert(
    fc.property(yamlish, (text) => {
      const result = validate(text);
      for (const d of [...result.errors, ...result.warnings]) {
        if (typeof d.message !== "string" || d.message.length === 0 || !d.rule.includes("/")) return false;
        if (/^\s+at /m.test(d.message)) return false; // no stack traces
      }
      if (!result.valid) invalid++;
      return true;
    }),
    { numRuns: 3000, seed: 20261129 },
  );
  t.ok(invalid > 1000, `most generated documents are invalid (${invalid})`);
});

const rawJob = (
  extra: { annotations?: string; url?: string; args?: string } = {},
) => `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: sized${extra.annotations ? `\n  annotations:\n${extra.annotations}` : ""}
spec:
  tasks:
    - name: main
      role: Actor
      agentType: Raw
      raw:${extra.url ? `\n        artifact: { url: "${extra.url}", sha256: "${"0".repeat(64)}" }` : ""}
        command: ["./run"]${extra.args ? `\n        args: ${extra.args}` : ""}
`;

t.test("annotations are capped at 256 KiB of keys and values, as Kubernetes counts them", async (t) => {
  // 256 KiB exactly is allowed: two annotations of 128 KiB, keys included.
  const value = (bytes: number, key: string) => "x".repeat(bytes - key.length);
  const exact = validate(
    rawJob({ annotations: `    a: ${value(128 * 1024, "a")}\n    b: ${value(128 * 1024, "b")}` }),
  );
  t.same(exact.errors, [], "at the limit");
  // Multi-byte characters count as their UTF-8 bytes.
  const over = validate(
    rawJob({ annotations: `    a: ${value(128 * 1024, "a")}\n    b: é${value(128 * 1024 - 1, "b")}` }),
  );
  t.match(over.errors, [
    {
      file: "repo.yaml",
      line: 5,
      path: "/metadata/annotations",
      rule: "size/annotations",
      message: /262145 bytes.*262144 bytes/,
    },
  ]);
  t.equal(over.errors.length, 1);
});

t.test("a 7 MiB annotation is refused (the object cap too), naming file, line and field", async (t) => {
  const result = validate(rawJob({ annotations: `    big: ${"x".repeat(7 * 1024 * 1024)}` }));
  t.same(
    result.errors.map((e) => [e.file, e.line, e.path, e.rule]),
    [
      ["repo.yaml", 1, "", "size/object"],
      ["repo.yaml", 5, "/metadata/annotations", "size/annotations"],
    ],
  );
});

t.test("an object over 1 MiB as JSON is refused, whatever field holds the bulk", async (t) => {
  const args = JSON.stringify(Array.from({ length: 20 }, () => "y".repeat(60 * 1024)));
  const result = validate(rawJob({ args }));
  t.match(result.errors, [{ line: 1, path: "", rule: "size/object", message: /over the 1\.00 MiB/ }]);
  t.equal(result.errors.length, 1);
  t.same(validate(rawJob({ args: JSON.stringify(["y".repeat(900 * 1024)]) })).errors, [], "under the cap");
});

t.test("artifact urls follow the hub's rules: no '..', no absolute path, fetched schemes only", async (t) => {
  for (const url of [
    "../pki/ca.key",
    "scripts/../../x",
    "/etc/passwd",
    "C:\\\\x.exe",
    "ftp://h/x",
    "HTTPS://h/x",
    "scripts/",
    ".",
  ]) {
    const result = validate(rawJob({ url }));
    t.match(
      result.errors,
      [{ line: 11, path: "/spec/tasks/0/raw/artifact/url", rule: "cross/artifact-url" }],
      url,
    );
  }
  for (const url of ["scripts/run.sh", "./run.sh", "https://example.com/run", "file:///opt/run"]) {
    t.same(validate(rawJob({ url })).errors, [], url);
  }
});
