// Teams in git are checked like every other kind: each mistake is one error naming the file,
// line and field, and a repository without mistakes passes.

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t, { type Test } from "tap";
import { validatePaths } from "../../../operators/source/index.ts";

const user = (name: string) => `apiVersion: rlinf.io/v1alpha1
kind: User
metadata:
  name: ${name}
spec:
  roles: [user]
`;

const job = (name: string, team: string) => `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: ${name}
spec:
  team: ${team}
  tasks:
    - name: main
      role: Actor
      agentType: Raw
      raw:
        command: ["true"]
`;

const teams = `apiVersion: rlinf.io/v1alpha1
kind: Team
metadata:
  name: robots
spec:
  members: [alice, bob]
  cohort: lab
  weight: 2
  priority: 1
  default: true
  flavors:
    - name: a100
      nodeLabels: { rlark.io/node-category-cloud: "true" }
  quota:
    - resource: nvidia.com/gpu
      nominal: "4"
      borrowingLimit: "2"
    - resource: nvidia.com/gpu
      flavor: a101
      nominal: "2"
---
apiVersion: rlinf.io/v1alpha1
kind: Team
metadata:
  name: vision
spec:
  default: true
  quota:
    - resource: cpu
      nominal: "8"
      borrowingLimit: "2"
`;

async function validate(t: Test, files: Record<string, string>) {
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-quota-validation-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
  return validatePaths(["."], { baseDir: dir });
}

t.test("a repository of Teams, their members and Jobs naming them is valid", async (t) => {
  const result = await validate(t, {
    "users.yaml": `${user("alice")}---\n${user("bob")}`,
    "team.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Team
metadata:
  name: robots
spec:
  members: [alice]
  cohort: lab
  quota:
    - resource: nvidia.com/gpu
      nominal: "4"
      borrowingLimit: "2"
`,
    "job.yaml": job("train", "robots"),
  });
  t.same(result.errors, []);
  t.equal(result.valid, true);
});

t.test("each mistake names its file, line and field", async (t) => {
  const result = await validate(t, {
    "users.yaml": user("alice"),
    "teams.yaml": teams,
    "job.yaml": job("train", "robtos"),
  });
  t.equal(result.valid, false);
  const found = result.errors.map(
    (e) => `${e.file}:${e.line} ${e.kind} ${e.name} ${e.path} ${e.rule}: ${e.message}`,
  );
  t.same(
    found.sort(),
    [
      'job.yaml:6 Job train /spec/team cross/team-exists: Team "robtos" is not defined in the repository (did you mean "robots"?)',
      'teams.yaml:19 Team robots /spec/quota/1/flavor cross/team-flavor: flavor "a101" is not in spec.flavors (did you mean "a100"?)',
      'teams.yaml:6 Team robots /spec/members/1 cross/team-member: User "bob" is not defined in the repository',
      "teams.yaml:27 Team vision /spec/default cross/team-default: only one Team may be the default; robots already is",
      "teams.yaml:31 Team vision /spec/quota/0/borrowingLimit cross/team-borrowing: a borrowing limit needs spec.cohort: there is nothing to borrow from",
    ].sort(),
  );
});

t.test("a Team's schema refuses what is not a quantity or a weight", async (t) => {
  const result = await validate(t, {
    "team.yaml": `apiVersion: rlinf.io/v1alpha1
kind: Team
metadata:
  name: robots
spec:
  weight: 0
  quota:
    - resource: nvidia.com/gpu
      nominal: four
`,
  });
  t.equal(result.valid, false);
  const paths = result.errors.map((e) => `${e.line} ${e.path}`).sort();
  t.same(paths, ["6 /spec/weight", "9 /spec/quota/0/nominal"]);
});
