// fleet/hub-ha built with the pinned kustomize and applied by server-side apply to a fleet
// cluster (moved into a namespace of the test's own, cluster-wide names suffixed, so it never
// meets fleet/hub's rlark-system): the Deployment has 3 replicas on the kubernetes store, a
// PodDisruptionBudget keeps two, and the hub's ServiceAccount may do what the kubernetes store
// and leader election do, and nothing more (checked by impersonation).
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { KubernetesObject } from "@kubernetes/client-node";
import t from "tap";
import { repoRoot } from "../../../hack/kube/paths.ts";
import { toolPath } from "../../../hack/tools/paths.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import {
  type Access,
  allowed,
  applyAll,
  deleteAll,
  impersonating,
  parseObjects,
  run,
} from "../../helpers/install.ts";

const { kubeConfig: kc } = fleetCluster(0);

type Loose = KubernetesObject & Record<string, unknown>;

t.test(
  "fleet/hub-ha: three hubs on the kubernetes store, a PDB, and RBAC for CRDs and Leases only",
  async (t) => {
    const namespace = await testNamespace(t, kc, "hubha");
    const suffix = randomBytes(3).toString("hex");
    const objects = parseObjects(run(toolPath("kustomize"), ["build", join(repoRoot, "fleet/hub-ha")]))
      .filter((o) => o.kind !== "Namespace")
      .map((o) => {
        const out = structuredClone(o) as Loose;
        if (out.metadata?.namespace) out.metadata.namespace = namespace;
        if (out.kind === "ClusterRole" || out.kind === "ClusterRoleBinding")
          out.metadata!.name += `-${suffix}`;
        if (out.kind === "ClusterRoleBinding") (out.roleRef as { name: string }).name += `-${suffix}`;
        for (const subject of (out.subjects as { namespace?: string }[] | undefined) ?? [])
          subject.namespace = namespace;
        return out as KubernetesObject;
      });
    const deployment = objects.find((o) => o.kind === "Deployment") as
      | (KubernetesObject & {
          spec: {
            replicas: number;
            template: {
              spec: { containers: { args: string[] }[]; volumes: { name: string; emptyDir?: object }[] };
            };
          };
        })
      | undefined;
    t.equal(deployment?.spec.replicas, 3, "three replicas");
    const args = deployment?.spec.template.spec.containers[0]?.args ?? [];
    t.ok(args.includes("--store=kubernetes"), "on the kubernetes store");
    t.ok(
      deployment?.spec.template.spec.volumes.find((v) => v.name === "data")?.emptyDir,
      "the data dir is scratch",
    );
    t.notOk(
      objects.some((o) => o.kind === "PersistentVolumeClaim"),
      "no volume claim",
    );
    t.ok(
      objects.some((o) => o.kind === "PodDisruptionBudget"),
      "a PodDisruptionBudget",
    );
    t.ok(
      objects.some((o) => o.kind === "Service" && o.metadata?.name === "rlark-hub-read"),
      "a read Service",
    );

    t.teardown(() => deleteAll(kc, objects));
    const applied = await applyAll(kc, objects);
    t.equal(applied.length, objects.length, "every object applies server-side");

    const hub = impersonating(kc, `system:serviceaccount:${namespace}:rlark-hub`);
    const may: Access[] = [
      { verb: "list", resource: "jobs", group: "rlinf.io" },
      { verb: "watch", resource: "tasks", group: "rlinf.io" },
      { verb: "create", resource: "tasks", group: "rlinf.io", namespace: "agent-x" },
      { verb: "update", resource: "jobs", group: "rlinf.io", subresource: "status" },
      { verb: "delete", resource: "tasks", group: "rlinf.io", namespace: "agent-x" },
      { verb: "create", resource: "namespaces" },
      { verb: "get", resource: "customresourcedefinitions", group: "apiextensions.k8s.io" },
      { verb: "update", resource: "leases", group: "coordination.k8s.io", namespace },
      { verb: "create", resource: "leases", group: "coordination.k8s.io", namespace },
    ];
    const mayNot: Access[] = [
      { verb: "get", resource: "secrets", namespace },
      { verb: "update", resource: "leases", group: "coordination.k8s.io", namespace: "kube-system" },
      { verb: "delete", resource: "namespaces" },
      { verb: "create", resource: "customresourcedefinitions", group: "apiextensions.k8s.io" },
      { verb: "create", resource: "deployments", group: "apps", namespace },
    ];
    const name = (a: Access) =>
      `${a.verb} ${a.group ?? ""}/${a.resource}${a.subresource ? `/${a.subresource}` : ""}`;
    for (const access of may) t.ok(await allowed(hub, access), `allowed: ${name(access)}`);
    for (const access of mayNot) t.notOk(await allowed(hub, access), `refused: ${name(access)}`);
  },
);
