// fleet/agent-sealed-secrets (opt-in, docs/secrets.md): with it the agent may write only Secrets
// labelled rlark.io/sealed-secret=true, refused by the API server itself (its ValidatingAdmission
// Policy), not merely absent from a review. The policy and role are applied for a ServiceAccount
// of this test's own, renamed from the shipped YAML, so the real agent identity other tests
// check ("the agent cannot list Secrets") is not changed under them.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  ApiException,
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
} from "@kubernetes/client-node";
import t from "tap";
import { repoRoot } from "../../../hack/kube/paths.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { applyAll, deleteAll, impersonating, parseObjects } from "../../helpers/install.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const core = kc.makeApiClient(CoreV1Api);
const LABELS = { "rlark.io/managed-by": "rlark-agent", "rlark.io/sealed-secret": "true" };

async function answer(call: Promise<unknown>): Promise<{ code: number; body: string }> {
  return call
    .then(() => ({ code: 200, body: "" }))
    .catch((err: unknown) =>
      err instanceof ApiException
        ? { code: err.code, body: String(err.body) }
        : { code: -1, body: String(err) },
    );
}

t.test("with fleet/agent-sealed-secrets the agent writes only Secrets made from SealedSecrets", async (t) => {
  const suffix = randomBytes(3).toString("hex");
  const account = `rlark-agent-sst-${suffix}`;
  const shipped = readFileSync(join(repoRoot, "fleet/agent-sealed-secrets/sealed-secrets-rbac.yaml"), "utf8");
  const objects = parseObjects(
    shipped
      .replaceAll("rlark-agent-sealed-secrets", `rlark-agent-sealed-secrets-${suffix}`)
      .replaceAll(
        "system:serviceaccount:rlark-system:rlark-agent'",
        `system:serviceaccount:rlark-system:${account}'`,
      )
      .replace(
        /- kind: ServiceAccount\n {4}name: rlark-agent\n/,
        `- kind: ServiceAccount\n    name: ${account}\n`,
      ),
  );
  t.ok(
    JSON.stringify(objects).includes(account) && !JSON.stringify(objects).includes(":rlark-agent'"),
    "the renamed objects name only this test's account",
  );
  await applyAll(kc, objects);
  t.teardown(() => deleteAll(kc, objects));
  const namespace = await testNamespace(t, kc, "sealed-rbac");
  const agent = impersonating(kc, `system:serviceaccount:rlark-system:${account}`);
  const agentObjects = KubernetesObjectApi.makeApiClient(agent);
  const apply = (as: KubeConfig, name: string, labels: Record<string, string>, dryRun = true) =>
    answer(
      KubernetesObjectApi.makeApiClient(as).patch(
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name, namespace, labels },
          type: "Opaque",
          data: { k: Buffer.from("v").toString("base64") },
        } as KubernetesObject,
        undefined,
        dryRun ? "All" : undefined,
        "rlark-agent",
        true,
        PatchStrategy.ServerSideApply,
      ),
    );

  // The policy takes a moment to be enforced after it is created.
  await waitFor(
    "the policy refuses an unlabelled Secret",
    async () => (await apply(agent, "plain", {})).code === 403,
    onKube,
  );
  const plain = await apply(agent, "plain", {});
  t.match(plain.body, /writes only Secrets made from SealedSecrets/, "the refusal says why");

  const made = await apply(agent, "from-sealed", LABELS, false);
  t.equal(made.code, 200, "a Secret labelled as made from a SealedSecret is written");
  t.equal(
    (await core.readNamespacedSecret({ name: "from-sealed", namespace })).metadata?.labels?.[
      "rlark.io/sealed-secret"
    ],
    "true",
  );
  t.equal(
    (
      await answer(
        agentObjects.delete({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "from-sealed", namespace },
        }),
      )
    ).code,
    200,
    "and deleted again (pruning)",
  );

  await core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: "theirs" }, stringData: { k: "v" } },
  });
  t.equal(
    (await apply(agent, "theirs", LABELS)).code,
    403,
    "a Secret it did not make cannot be taken over by labelling it",
  );
  t.equal(
    (
      await answer(
        agentObjects.delete(
          { apiVersion: "v1", kind: "Secret", metadata: { name: "theirs", namespace } },
          undefined,
          "All",
        ),
      )
    ).code,
    403,
    "nor deleted",
  );
  t.equal(
    (await apply(kc, "theirs-too", {})).code,
    200,
    "nobody else is affected (an admin writes any Secret)",
  );
});
