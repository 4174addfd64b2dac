// The hub reads repository artifacts relative to its manifest folder (`--path`); the plan must
// read them from the same place whatever paths it is given, or it is redder (or greener) than
// the hub.
import path from "node:path";
import t from "tap";
import { planTree } from "../../../operators/feedback/plan/index.ts";

const root = path.resolve(import.meta.dirname, "../../..");
// examples/jobs/cartpole-local.yaml names scripts/cartpole.mjs, inside examples/ (the hub's --path).

for (const paths of [["examples"], ["examples/jobs/cartpole-local.yaml", "examples/clusters"]]) {
  t.test(`artifacts are read from the folder holding ${paths.join(" and ")}`, async (t) => {
    const plan = await planTree({ dir: root, paths, revision: "", live: [], against: "an empty state" });
    t.same(
      plan.errors.filter((e) => e.rule === "source/artifact"),
      [],
      "scripts/cartpole.mjs is found in examples/",
    );
    t.ok(plan.valid);
  });
}

t.test("an artifact that is not in the folder holding the paths is still refused", async (t) => {
  const plan = await planTree({
    dir: root,
    paths: ["examples/jobs/cartpole-local.yaml"],
    revision: "",
    live: [],
    against: "an empty state",
  });
  t.match(
    plan.errors.filter((e) => e.rule === "source/artifact"),
    [
      {
        file: "examples/jobs/cartpole-local.yaml",
        message: /scripts\/cartpole\.mjs" is not in the repository/,
      },
    ],
  );
});
