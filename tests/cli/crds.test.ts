import { readFileSync } from "node:fs";
import t from "tap";
import { parseAllDocuments } from "yaml";
import { rlark, repoRoot as root } from "../helpers/rlark-cli.ts";

t.test("rlark crds prints one CRD per kind, the same as the committed schemas/crds", async (t) => {
  const run = await rlark(["crds"]);
  t.equal(run.code, 0, run.stderr);
  const crds = parseAllDocuments(run.stdout).map(
    (d) => d.toJS() as { kind: string; metadata: { name: string } },
  );
  t.same(
    crds.map((c) => c.metadata.name),
    [
      "jobs",
      "workflows",
      "domains",
      "addons",
      "clusters",
      "nodes",
      "users",
      "teams",
      "accesspolicies",
      "sealedsecrets",
      "bundles",
      "tasks",
      "domainpeers",
      "addonreleases",
      "bundlereleases",
      "pods",
    ].map((p) => `${p}.rlinf.io`),
  );
  t.ok(crds.every((c) => c.kind === "CustomResourceDefinition"));
  const committed = readFileSync(`${root}schemas/crds/jobs.rlinf.io.yaml`, "utf8").replace(/^#.*\n/, "");
  t.ok(run.stdout.startsWith(committed), "the Job CRD matches schemas/crds/jobs.rlinf.io.yaml");
});

t.test("rlark crds takes kinds or plurals and prints only those", async (t) => {
  const run = await rlark(["crds", "Task", "domainpeers", "--format", "json"]);
  t.equal(run.code, 0, run.stderr);
  const list = JSON.parse(run.stdout) as { kind: string; items: Array<{ metadata: { name: string } }> };
  t.equal(list.kind, "List");
  t.same(
    list.items.map((c) => c.metadata.name),
    ["tasks.rlinf.io", "domainpeers.rlinf.io"],
  );
});

t.test("an unknown kind is a usage error naming the known kinds", async (t) => {
  const run = await rlark(["crds", "Robot"]);
  t.equal(run.code, 2);
  t.equal(run.stdout, "");
  t.match(run.stderr, 'unknown kind "Robot"; known: Job, Workflow');
});

t.test("rlark crds --help explains the command", async (t) => {
  const run = await rlark(["crds", "--help"]);
  t.equal(run.code, 0);
  t.match(run.stdout, "CustomResourceDefinition");
  t.match(run.stdout, "--format <format>");
  t.match(run.stdout, "rlark crds | kubectl apply");
});
