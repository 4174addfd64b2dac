// fleet/hub and fleet/agent, built with the pinned kustomize, applied by server-side apply to a
// fleet cluster: both Deployments roll out on the kwok nodes, and the agent's ServiceAccount may
// do what the kubernetes runtime does and nothing more. Runs on cluster 0 (helm.test.ts uses 1:
// both install into rlark-system under the same names).
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { KubernetesObject } from "@kubernetes/client-node";
import t from "tap";
import { repoRoot } from "../../../hack/kube/paths.ts";
import { toolPath } from "../../../hack/tools/paths.ts";
import { fleetCluster } from "../../helpers/fleet.ts";
import {
  applyAll,
  checkAgentAccess,
  checkRolledOut,
  checkRunsRlark,
  deleteAll,
  isSharedAgentRbac,
  parseObjects,
  run,
  volumeForClaim,
} from "../../helpers/install.ts";

const { kubeConfig: kc } = fleetCluster(0);
const kustomize = toolPath("kustomize");
const build = (dir: string): KubernetesObject[] =>
  parseObjects(run(kustomize, ["build", join(repoRoot, "fleet", dir)]));

type Container = { name: string; image: string; args: string[] };
type Workload = KubernetesObject & { spec: { template: { spec: { containers: Container[] } } } };
const container = (objects: KubernetesObject[], name: string): Container => {
  const d = objects.find((o) => o.kind === "Deployment" && o.metadata?.name === name) as Workload | undefined;
  const c = d?.spec.template.spec.containers[0];
  if (!c) throw new Error(`no Deployment ${name} with a container`);
  return c;
};

/** rlark-system and the agent's identity and RBAC, which fleet-agent.test.ts applies too: they stay. */
const sharedWithOtherTests = (o: KubernetesObject): boolean => o.kind === "Namespace" || isSharedAgentRbac(o);

/** The Secrets docs/install.md has an operator create before applying fleet/hub and fleet/agent. */
function operatorSecrets(): KubernetesObject[] {
  const secret = (name: string, stringData: Record<string, string>) =>
    ({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace: "rlark-system" },
      stringData,
    }) as KubernetesObject;
  return [
    secret("rlark-hub-admin-token", { "admin-token": randomBytes(32).toString("base64url") }),
    secret("rlark-hub-ca", { "ca.crt": "test", "ca.key": "test" }),
    secret("rlark-hub-webhook", { "webhook-secret": randomBytes(20).toString("hex") }),
    secret("rlark-agent-bootstrap", {
      hub: "hub.example.com:2222",
      token: "rlt.test",
      "ca-hash": "sha256:00",
    }),
  ];
}

t.test(
  "kustomize builds the hub (rlark/hub) and the agent (rlark/rlark) with options rlark has",
  async (t) => {
    const version = (await import("../../../package.json", { with: { type: "json" } })).default.version;
    for (const [dir, name, command] of [
      ["hub", "rlark-hub", "hub"],
      ["agent", "rlark-agent", "agent"],
    ] as const) {
      checkRunsRlark(t, name, command, container(build(dir), name), version);
    }
    const hub = build("hub");
    t.same(
      hub.map((o) => o.kind).sort(),
      ["ConfigMap", "Deployment", "Namespace", "PersistentVolumeClaim", "Service", "ServiceAccount"],
      "the hub: its configuration, data volume, Service and Deployment (the Secrets are the operator's)",
    );
  },
);

t.test("both bases roll out on kwok nodes after server-side apply", async (t) => {
  const objects = [...build("hub"), ...build("agent")];
  const secrets = operatorSecrets();
  const pv = await volumeForClaim(kc, "rlark-system", "rlark-hub-data");
  const own = [...objects, ...secrets].filter((o) => !sharedWithOtherTests(o));
  t.teardown(() => deleteAll(kc, [...own, pv]));
  await applyAll(kc, [...objects, ...secrets]);
  await checkRolledOut(t, kc);
});

t.test("the agent's ServiceAccount may do what the kubernetes runtime does, and no more", async (t) => {
  await applyAll(
    kc,
    build("agent").filter((o) => o.kind !== "Deployment"),
  );
  await checkAgentAccess(t, kc);
});
