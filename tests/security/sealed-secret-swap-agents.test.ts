// Issue 31, item 3, with the agents: lab and beijing are kubernetes agents on two real API servers
// of the fleet. A SealedSecret sealed for lab reaches lab's cluster as a Secret; moved to
// agent-beijing, in git (refused) or straight into the hub's store (past validation), it is never
// in what the hub sends beijing's agent, and beijing's cluster never has the Secret.
import { randomBytes } from "node:crypto";
import { CoreV1Api } from "@kubernetes/client-node";
import t from "tap";
import { sealedSecretContext } from "../../operators/api/index.ts";
import { sealValue } from "../../operators/lib/seal/index.ts";
import type { KubeObject } from "../../operators/lib/store/index.ts";
import { fleetCluster, testNamespace } from "../helpers/fleet.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { startKubernetesAgentOnHub } from "../helpers/kubernetes-agent-on-hub.ts";
import { onKube, waitFor } from "../helpers/wait-for.ts";

const labKube = fleetCluster(0).kubeConfig;
const beijingKube = fleetCluster(1).kubeConfig;

const CLUSTERS = `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: lab }
spec: { runtime: kubernetes }
---
apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: beijing }
spec: { runtime: kubernetes }
`;

t.test("a SealedSecret moved to beijing never reaches beijing's agent", async (t) => {
  const canary = `swap-${randomBytes(8).toString("hex")}`;
  // the Secret's namespace, on both clusters
  const namespace = await testNamespace(t, labKube, "swap");
  const beijingCore = beijingKube.makeApiClient(CoreV1Api);
  await beijingCore.createNamespace({
    body: { metadata: { name: namespace, labels: { "rlark.io/test": "true" } } },
  });
  t.teardown(() => beijingCore.deleteNamespace({ name: namespace }).catch(() => undefined));
  const labCore = labKube.makeApiClient(CoreV1Api);

  const { hub, git } = await startHubOnGit(t, { files: { "clusters.yaml": CLUSTERS }, intervalMs: 100 });
  await waitFor("the Clusters from git", async () => hub.store.get("Cluster", undefined, "beijing"), onKube);
  await startKubernetesAgentOnHub(t, hub, "lab", { kubeConfig: labKube, namespace, reportIntervalMs: 500 });
  const beijing = await startKubernetesAgentOnHub(t, hub, "beijing", {
    kubeConfig: beijingKube,
    namespace,
    reportIntervalMs: 500,
  });
  const beijingSecrets = () => beijing.desired().filter((o) => o.kind === "Secret");

  const object = {
    metadata: { name: "db", namespace: "agent-lab" },
    spec: { namespace },
  };
  const sealed = sealValue(
    canary,
    hub.sealKeys.currentPublicKeyPem(),
    sealedSecretContext(object, "password"),
  );
  const yaml = (agentNamespace: string) => `apiVersion: rlinf.io/v1alpha1
kind: SealedSecret
metadata:
  name: db
  namespace: ${agentNamespace}
spec:
  namespace: ${namespace}
  encryptedData:
    password: ${sealed}
`;
  await git.commit({ "secrets/db.yaml": yaml("agent-lab") });
  const delivered = await waitFor(
    "the Secret on lab's cluster",
    async () => labCore.readNamespacedSecret({ name: "db", namespace }),
    onKube,
  );
  t.equal(Buffer.from(delivered.data?.password ?? "", "base64").toString(), canary);

  // the swap in git: refused, beijing's agent is sent nothing
  const attack = await git.commit({ "secrets/db.yaml": yaml("agent-beijing") });
  await waitFor(
    "the swap refused",
    async () => {
      const source = (await (
        await fetch(`${hub.url}/api/v1/source`, { headers: { authorization: `Bearer ${hub.adminToken}` } })
      ).json()) as { state?: string; lastAttemptedRevision?: string };
      return source.lastAttemptedRevision === attack && source.state === "Invalid";
    },
    onKube,
  );
  t.same(beijingSecrets(), [], "beijing's desired set holds no Secret");

  // the swap past validation: the hub sends beijing a desired set without it
  const stored = (await hub.store.get("SealedSecret", "agent-lab", "db")) as KubeObject;
  await hub.store.create({
    apiVersion: stored.apiVersion,
    kind: stored.kind,
    metadata: { name: "db", namespace: "agent-beijing" },
    spec: stored.spec,
  });
  // a Task for beijing after it: once beijing's agent has the Task, it has had the set the store write made
  await hub.store.create({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Task",
    metadata: { name: "marker", namespace: "agent-beijing", labels: { "rlinf.io/job": "marker" } },
    spec: {
      job: "marker",
      task: "marker",
      run: 1,
      role: "Actor",
      agentType: "Raw",
      raw: { command: ["true"] },
    },
  });
  await waitFor(
    "beijing's agent has the Task written after the swap",
    () => beijing.desired().some((o) => o.kind === "Task" && o.metadata.name === "marker") || undefined,
    onKube,
  );
  t.same(beijingSecrets(), [], "beijing's agent was sent no Secret");
  t.equal(
    await beijingCore.readNamespacedSecret({ name: "db", namespace }).catch(() => undefined),
    undefined,
    "beijing's cluster has no Secret db",
  );
});
