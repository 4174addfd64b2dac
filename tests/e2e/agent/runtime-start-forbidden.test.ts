// KubernetesRuntime.start under an identity whose RBAC lacks a permission the watches need: a 403
// on the first list is no passing trouble, so start fails at once with one line naming the verb,
// the resource and the ClusterRole to apply, instead of retrying (and logging) forever.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type KubernetesObject, KubernetesObjectApi, type V1PolicyRule } from "@kubernetes/client-node";
import t from "tap";
import YAML from "yaml";
import { repoRoot } from "../../../hack/kube/paths.ts";
import { KubernetesRuntime } from "../../../operators/agent/runtimes/kubernetes/index.ts";
import { fleetCluster, within } from "../../helpers/fleet.ts";
import { impersonating } from "../../helpers/install.ts";

const { kubeConfig: kc } = fleetCluster(0);
const objects = KubernetesObjectApi.makeApiClient(kc);

t.test("an identity that may not list Nodes fails start with the missing permission", async (t) => {
  const name = `rlark-test-no-nodes-${randomBytes(4).toString("hex")}`;
  // fleet/agent's ClusterRole without its Nodes rule: everything else the runtime needs is granted.
  const role = YAML.parse(
    readFileSync(join(repoRoot, "fleet/agent/cluster-role.yaml"), "utf8"),
  ) as KubernetesObject & {
    rules: V1PolicyRule[];
  };
  role.metadata = { name };
  role.rules = role.rules.filter((r) => !r.resources?.includes("nodes"));
  const binding = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name }],
  };
  await objects.create(role);
  await objects.create(binding);
  t.teardown(async () => {
    await objects.delete(binding).catch(() => undefined);
    await objects.delete(role).catch(() => undefined);
  });

  const warnings: string[] = [];
  const error = await within(
    "start to fail",
    KubernetesRuntime.start({
      kubeConfig: impersonating(kc, name),
      instance: `t${randomBytes(4).toString("hex")}`,
      logger: { info() {}, warn: (message) => warnings.push(message), error() {} },
    }).then(
      async (runtime) => {
        await runtime.stop();
        return undefined;
      },
      (err: unknown) => err,
    ),
    60_000,
  );
  t.ok(error instanceof Error, "start fails");
  const message = (error as Error).message;
  t.comment(message);
  t.match(message, /may not list nodes/, "names the verb and the resource");
  t.match(message, /fleet\/agent/, "says what to apply");
  t.notMatch(message, "\n", "one line");
  t.same(
    warnings.filter((w) => w === "list failed"),
    [],
    "no retries logged for a permission that is missing",
  );
});
