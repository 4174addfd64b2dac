import t from "tap";
import { specHash } from "../../../operators/controllers/job/spec-hash.ts";
import { job, k8sTask } from "../placement/fixtures.ts";

t.test("the spec hash follows the task templates, the domain and the ssh key, nothing else", async (t) => {
  const base = job("ppo", [k8sTask("trainer", { requests: { cpu: "1" } })], { domain: "lab" });
  const hash = specHash(base);
  t.match(hash, /^[0-9a-f]{16}$/);

  const reordered = structuredClone(base);
  const [template] = reordered.spec.tasks;
  if (!template) throw new Error("fixture");
  reordered.spec.tasks = [Object.fromEntries(Object.entries(template).reverse()) as typeof template];
  t.equal(specHash(reordered), hash, "key order (reformatted YAML) does not count");

  const relabelled = { ...base, metadata: { name: "ppo", labels: { team: "rl" }, annotations: { a: "b" } } };
  t.equal(specHash(relabelled), hash, "metadata does not count");
  t.equal(specHash({ ...base, spec: { ...base.spec, stopped: true } }), hash, "stopping is not a new spec");

  t.not(specHash({ ...base, spec: { ...base.spec, domain: "other" } }), hash);
  t.not(specHash({ ...base, spec: { ...base.spec, sshPublicKey: "ssh-ed25519 AAAA x" } }), hash);
  const edited = structuredClone(base);
  const container = edited.spec.tasks[0]?.kubernetes?.workload.template.spec.containers?.[0];
  if (!container) throw new Error("fixture");
  container.args = ["--lr", "0.01"];
  t.not(specHash(edited), hash, "an edited container changes it");
});
