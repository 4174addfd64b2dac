// The hub validates each revision after the first over what changed (RevisionMemo: kept parses,
// per-document checks and the cross-object rules' state, api/validate/cross-memo.ts). Whatever
// the edit, a revision must get exactly the findings a whole validation of it gives: these tests
// run random small edits of a repository whose objects refer to each other across files, and
// named cases where only a reference in another file breaks.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import fc from "fast-check";
import t from "tap";
import type { ValidationResult } from "../../operators/api/index.ts";
import { validatePaths } from "../../operators/source/index.ts";
import { RevisionMemo } from "../../operators/source/revision-memo.ts";

const API = "rlinf.io/v1alpha1";
const FILES = ["a.yaml", "b.yaml", "c.yaml", "sub/d.yaml", "base.yaml"];

function job(name: string, domain?: string, team?: string, valid = true): string {
  return [
    `apiVersion: ${API}`,
    "kind: Job",
    `metadata: {name: ${name}}`,
    "spec:",
    ...(domain ? [`  domain: ${domain}`] : []),
    ...(team ? [`  team: ${team}`] : []),
    ...(valid
      ? [
          "  tasks:",
          "    - name: main",
          "      role: Actor",
          "      agentType: Kubernetes",
          "      kubernetes: {workload: {kind: Deployment, template: {spec: {containers: [{name: main, image: busybox}]}}}}",
        ]
      : ["  tasks: not-a-list"]),
  ].join("\n");
}

const name = (names: string[]) => fc.constantFrom(...names);
/** Mostly `good`, sometimes `bad`: most revisions must be valid for the kept state to move on. */
const mostly = (good: string[], bad: string) =>
  fc.oneof({ weight: 40, arbitrary: name(good) }, { weight: 1, arbitrary: fc.constant(bad) });
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const someOf = (names: string[]) => fc.subarray(names);
const list = (items: string[]) => `[${items.join(", ")}]`;

/** One document: an object of ours that refers to others by name, or a foreign one. */
const jobArb = fc
  .tuple(
    // A 60-character name makes its Task names too long: a finding of the Job alone.
    mostly(
      Array.from({ length: 40 }, (_, i) => `job-${i}`),
      "x".repeat(60),
    ),
    maybe(mostly(["net", "lab"], "gone")),
    maybe(mostly(["ml", "ops"], "nobody")),
    fc.oneof({ weight: 40, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  )
  .map(([n, d, team, valid]) => job(n, d, team, valid));
const domainArb = fc
  .tuple(name(["net", "lab", "far"]), name(["10.0.0.0/16", "10.1.0.0/24", "10.2.0.0/16", "10.0.1.0/24"]))
  .map(([n, cidr]) => `apiVersion: ${API}\nkind: Domain\nmetadata: {name: ${n}}\nspec: {cidr: "${cidr}"}`);
const teamArb = fc
  .tuple(name(["ml", "ops"]), someOf(["ann", "bob", "eve"]), fc.boolean(), fc.boolean())
  .map(
    ([n, members, isDefault, twoLines]) =>
      `apiVersion: ${API}\nkind: Team\nmetadata: {name: ${n}}\nspec:\n  members: ${list(members)}\n  default: ${isDefault}\n  quota:\n    - {resource: cpu, nominal: "4"}\n${twoLines ? '    - {resource: cpu, nominal: "2"}\n' : ""}`,
  );
const userArb = name(["ann", "bob"]).map(
  (n) => `apiVersion: ${API}\nkind: User\nmetadata: {name: ${n}}\nspec: {roles: [user]}`,
);
const clusterArb = name(["bj", "sh"]).map(
  (n) => `apiVersion: ${API}\nkind: Cluster\nmetadata: {name: ${n}}\nspec: {runtime: process}`,
);

/** One document: an object of ours that refers to others by name, or a foreign one. */
const documentArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: jobArb },
  domainArb,
  teamArb,
  userArb,
  clusterArb,
  fc
    .tuple(name(["n1", "n2"]), mostly(["agent-bj", "agent-sh"], "agent-xx"))
    .map(([n, ns]) => `apiVersion: ${API}\nkind: Node\nmetadata: {name: ${n}, namespace: ${ns}}\nspec: {}`),
  fc
    .tuple(name(["p1", "p2"]), someOf(["ann", "bob"]), someOf(["bj", "sh"]), maybe(mostly(["net"], "gone")))
    .map(
      ([n, users, clusters, domain]) =>
        `apiVersion: ${API}\nkind: AccessPolicy\nmetadata: {name: ${n}}\nspec:\n  subjects: {users: ${list(users)}}\n  targets: {clusters: ${list(clusters)}, domains: ${list(domain ? [domain] : [])}}\n  verbs: [shell]`,
    ),
  fc
    .tuple(name(["w1", "w2"]), maybe(mostly(["net"], "gone")), mostly(["one"], "three"))
    .map(
      ([n, d, dep]) =>
        `apiVersion: ${API}\nkind: Workflow\nmetadata: {name: ${n}}\nspec:\n  jobs:\n    - name: one\n      template:\n${d ? `        domain: ${d}\n` : ""}        tasks: [{name: main, role: Actor, agentType: Kubernetes, kubernetes: {workload: {kind: Deployment, template: {spec: {containers: [{name: main, image: busybox}]}}}}}]\n    - name: two\n      dependsOn: [${dep}]\n      template:\n        tasks: [{name: main, role: Actor, agentType: Kubernetes, kubernetes: {workload: {kind: Deployment, template: {spec: {containers: [{name: main, image: busybox}]}}}}}]`,
    ),
  fc.constant("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {a: b}"),
);

/** What the other files refer to, valid together: an edit of it breaks references. */
const BASE = [
  `apiVersion: ${API}\nkind: Domain\nmetadata: {name: net}\nspec: {cidr: "10.0.0.0/16"}`,
  `apiVersion: ${API}\nkind: Domain\nmetadata: {name: lab}\nspec: {cidr: "10.1.0.0/16"}`,
  `apiVersion: ${API}\nkind: Team\nmetadata: {name: ml}\nspec: {members: [ann]}`,
  `apiVersion: ${API}\nkind: Team\nmetadata: {name: ops}\nspec: {members: [bob]}`,
  `apiVersion: ${API}\nkind: User\nmetadata: {name: ann}\nspec: {roles: [user]}`,
  `apiVersion: ${API}\nkind: User\nmetadata: {name: bob}\nspec: {roles: [user]}`,
  `apiVersion: ${API}\nkind: Cluster\nmetadata: {name: bj}\nspec: {runtime: process}`,
  `apiVersion: ${API}\nkind: Cluster\nmetadata: {name: sh}\nspec: {runtime: process}`,
];

/** A file's new content (undefined: the file is deleted). */
const editArb = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      file: name(FILES.slice(0, -1)),
      documents: maybe(fc.array(jobArb, { maxLength: 3 })),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      file: name(FILES.slice(0, -1)),
      documents: maybe(fc.array(documentArb, { maxLength: 3 })),
    }),
  },
  // The base loses some of its objects, or gains others.
  {
    weight: 1,
    arbitrary: fc.record({ file: fc.constant("base.yaml"), documents: maybe(fc.subarray(BASE)) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      file: fc.constant("base.yaml"),
      documents: fc.array(documentArb, { maxLength: 4 }).map((more) => [...BASE, ...more]),
    }),
  },
);

async function write(dir: string, file: string, documents: string[] | undefined): Promise<void> {
  const target = path.join(dir, file);
  if (documents === undefined) {
    await rm(target, { force: true });
    return;
  }
  await mkdir(path.dirname(target), { recursive: true });
  await writeFile(target, documents.join("\n---\n"));
}

/** The revision path's use of the memo: load, validate, then keep what was read for the next. */
async function incremental(memo: RevisionMemo, dir: string): Promise<ValidationResult> {
  memo.begin();
  const result = await validatePaths([dir], { baseDir: dir, cache: memo, memo: memo.checks });
  if (!result.valid) memo.refused();
  else memo.applied(memo.changes(result.objects), result.objects);
  return result;
}

const findings = (r: ValidationResult) => ({ valid: r.valid, errors: r.errors, warnings: r.warnings });

t.test("random edits across files: each revision gets the findings of a whole validation", async (t) => {
  const root = await mkdtemp(path.join(tmpdir(), "rlark-incremental-"));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  let run = 0;
  let refused = 0;
  let accepted = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(jobArb, { maxLength: 3 }), {
        minLength: FILES.length - 1,
        maxLength: FILES.length - 1,
      }),
      fc.array(editArb, { minLength: 1, maxLength: 8 }),
      async (start, edits) => {
        // Each revision in a fresh directory, as the hub's snapshots are.
        const memo = new RevisionMemo();
        const revision = async (change: (dir: string) => Promise<void>) => {
          const dir = path.join(root, `r${run++}`);
          await mkdir(dir, { recursive: true });
          await change(dir);
          const inc = await incremental(memo, dir);
          const whole = await validatePaths([dir], { baseDir: dir });
          if (whole.valid) accepted++;
          else refused++;
          return { inc: findings(inc), whole: findings(whole) };
        };
        let files: Record<string, string[] | undefined> = {
          ...Object.fromEntries(FILES.slice(0, -1).map((f, i) => [f, start[i]])),
          "base.yaml": BASE,
        };
        const first = await revision(async (dir) => {
          for (const [file, documents] of Object.entries(files)) await write(dir, file, documents);
        });
        if (JSON.stringify(first.inc) !== JSON.stringify(first.whole)) {
          t.same(first.inc, first.whole, "the first revision");
          return false;
        }
        for (const edit of edits) {
          files = { ...files, [edit.file]: edit.documents };
          const next = await revision(async (dir) => {
            for (const [file, documents] of Object.entries(files)) await write(dir, file, documents);
          });
          if (JSON.stringify(next.inc) !== JSON.stringify(next.whole)) {
            t.same(next.inc, next.whole, `after editing ${edit.file}`);
            return false;
          }
        }
        return true;
      },
    ),
    { numRuns: 40 },
  );
  t.ok(
    refused >= 10 && accepted >= 10,
    `both outcomes were exercised (${accepted} valid, ${refused} refused)`,
  );
});

t.test(
  "a change in one file that breaks a reference from another is refused as a whole run refuses it",
  async (t) => {
    const root = await mkdtemp(path.join(tmpdir(), "rlark-incremental-"));
    t.teardown(() => rm(root, { recursive: true, force: true }));
    const memo = new RevisionMemo();
    let n = 0;
    const step = async (files: Record<string, string[] | undefined>) => {
      const dir = path.join(root, `r${n++}`);
      for (const [file, documents] of Object.entries(files)) await write(dir, file, documents);
      const inc = await incremental(memo, dir);
      t.same(findings(inc), findings(await validatePaths([dir], { baseDir: dir })), "as a whole validation");
      return inc;
    };
    const domain = `apiVersion: ${API}\nkind: Domain\nmetadata: {name: net}\nspec: {cidr: "10.0.0.0/16"}`;
    const team = (line2: boolean) =>
      `apiVersion: ${API}\nkind: Team\nmetadata: {name: ml}\nspec:\n  quota:\n    - {resource: cpu, nominal: "4"}\n${line2 ? '    - {resource: cpu, nominal: "2"}\n' : ""}`;
    const base = {
      "jobs.yaml": [job("a", "net", "ml"), job("b")],
      "domain.yaml": [domain],
      "team.yaml": [team(false)],
    };
    t.ok((await step(base)).valid, "the first revision is valid");

    const noDomain = await step({ ...base, "domain.yaml": undefined });
    t.notOk(noDomain.valid, "the Domain deleted in another file");
    t.match(noDomain.errors, [
      { file: "jobs.yaml", line: 5, name: "a", path: "/spec/domain", rule: "cross/domain-exists" },
    ]);

    const duplicate = await step({ ...base, "new.yaml": [job("b")] });
    t.notOk(duplicate.valid, "a duplicate name in a new file");
    t.match(duplicate.errors, [
      { file: "new.yaml", name: "b", path: "/metadata/name", rule: "cross/unique-name" },
    ]);
    t.match(duplicate.errors[0]?.message, /also defined at jobs\.yaml:\d+/);

    const quota = await step({ ...base, "team.yaml": [team(true)] });
    t.notOk(quota.valid, "a second quota line of the Team");
    t.match(quota.errors, [{ file: "team.yaml", rule: "cross/team-quota-line", path: "/spec/quota/1" }]);

    const longName = await step({ ...base, "jobs.yaml": [job("x".repeat(60))] });
    t.notOk(longName.valid, "a Job whose own Task names are too long");
    const again = await step({ ...base, "jobs.yaml": [job("x".repeat(60))], "team.yaml": [team(false), ""] });
    t.notOk(
      again.valid,
      "still refused when only another file changed (its findings kept with its document)",
    );
    t.match(again.errors, [{ file: "jobs.yaml", rule: "cross/task-name" }]);
    t.ok((await step(base)).valid, "and valid again once fixed");
  },
);

t.test("a kept parse the cross-object state did not see last time makes it start over", async (t) => {
  const root = await mkdtemp(path.join(tmpdir(), "rlark-incremental-"));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const memo = new RevisionMemo();
  const run = async (name: string, files: Record<string, string[]>, keep: boolean) => {
    const dir = path.join(root, name);
    for (const [file, documents] of Object.entries(files)) await write(dir, file, documents);
    memo.begin();
    const result = await validatePaths([dir], { baseDir: dir, cache: memo, memo: memo.checks });
    // Without keep, the parses of files this load did not read are not dropped.
    if (keep) memo.applied(memo.changes(result.objects), result.objects);
    return { inc: findings(result), whole: findings(await validatePaths([dir], { baseDir: dir })) };
  };
  await run("r1", { "a.yaml": [job("a")], "b.yaml": [job("b"), job("a")] }, true);
  await run("r2", { "a.yaml": [job("a")] }, false);
  const r3 = await run("r3", { "a.yaml": [job("a")], "b.yaml": [job("b"), job("a")] }, true);
  t.notOk(r3.whole.valid, "the duplicate in b.yaml is refused by a whole validation");
  t.same(
    r3.inc,
    r3.whole,
    "and by the incremental one, though b.yaml's parse was kept across a run without it",
  );
});
