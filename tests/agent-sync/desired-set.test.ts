// What the hub hands a cluster's agent, read from a real store: the cluster's own Tasks (not
// those being deleted, not other clusters'), its DomainPeers, the AddonReleases the Addon
// controller rendered for it, and git's overlay of its Nodes; never status.

import { pathToFileURL } from "node:url";
import t from "tap";
import { desiredForCluster } from "../../operators/agent-sync/desired-set.ts";
import { kindKeyOf } from "../../operators/lib/kube-object.ts";
import type { KubeObject } from "../../operators/lib/store/index.ts";
import { tempStore } from "../lib/store/helpers.ts";
import { cluster, node, task } from "./fixtures.ts";

const artifactDir = "/var/lib/rlark/artifacts";
const keys = (objects: KubeObject[]) => objects.map(kindKeyOf);
const artifactUrlOf = (task: KubeObject | undefined) =>
  (task?.spec as { raw: { artifact: { url: string } } } | undefined)?.raw.artifact.url;

function addon(name: string, namespace: string | undefined, spec: Record<string, unknown>): KubeObject {
  return { apiVersion: "rlinf.io/v1alpha1", kind: "Addon", metadata: { name, namespace }, spec };
}

function release(clusterName: string, name: string): KubeObject {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "AddonRelease",
    metadata: { name, namespace: `agent-${clusterName}` },
    spec: { addonName: "demo", version: "1.0.0", namespace: "rlark-system", addonGeneration: 1, objects: [] },
  };
}

function domainPeer(clusterName: string, name: string): KubeObject {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "DomainPeer",
    metadata: { name, namespace: `agent-${clusterName}` },
    spec: { domain: name, peers: [] },
  };
}

t.test("a cluster gets its own Tasks and DomainPeers, sorted, and none of another cluster's", async (t) => {
  const { store } = tempStore(t);
  await store.create(cluster("east"));
  await store.create(task("east", "train-b"));
  await store.create(task("east", "train-a"));
  await store.create(task("west", "train-c"));
  await store.create(domainPeer("east", "net"));
  await store.create(domainPeer("west", "net"));
  t.same(keys(await desiredForCluster(store, "east", { artifactDir })), [
    "DomainPeer/agent-east/net",
    "Task/agent-east/train-a",
    "Task/agent-east/train-b",
  ]);
  t.same(keys(await desiredForCluster(store, "west", { artifactDir })), [
    "DomainPeer/agent-west/net",
    "Task/agent-west/train-c",
  ]);
});

t.test("a Task being deleted is left out, so the agent prunes it", async (t) => {
  const { store } = tempStore(t);
  await store.create(task("east", "kept"));
  await store.create(task("east", "going", { finalizers: ["rlark.io/agent-cleanup"] }));
  await store.delete("Task", "agent-east", "going");
  const going = await store.get("Task", "agent-east", "going");
  t.ok(going?.metadata.deletionTimestamp, "the finalizer holds the Task in the store");
  t.same(keys(await desiredForCluster(store, "east", { artifactDir })), ["Task/agent-east/kept"]);
});

t.test("status stays on the hub: the agent is handed metadata and spec only", async (t) => {
  const { store } = tempStore(t);
  const created = await store.create(task("east", "train-a"));
  await store.updateStatus({ ...created, status: { phase: "Running" } });
  const [sent] = await desiredForCluster(store, "east", { artifactDir });
  t.equal(sent?.status, undefined);
  t.same(sent?.spec, created.spec);
  t.equal(sent?.metadata.uid, created.metadata.uid);
});

t.test("AddonReleases: the cluster's own, not one being uninstalled, never the Addons", async (t) => {
  const { store } = tempStore(t);
  await store.create(addon("placed", "agent-east", { addonName: "demo", version: "1.0.0" }));
  await store.create(release("east", "placed"));
  await store.create(release("west", "placed"));
  await store.create({
    ...release("east", "leaving"),
    metadata: { name: "leaving", namespace: "agent-east", finalizers: ["rlark.io/agent-cleanup"] },
  });
  await store.delete("AddonRelease", "agent-east", "leaving");
  t.same(keys(await desiredForCluster(store, "east", { artifactDir })), ["AddonRelease/agent-east/placed"]);
});

t.test("Nodes: only git's overlay (its keys and the cordon), never what the agent reported", async (t) => {
  const { store } = tempStore(t);
  await store.create(node("east", "reported-only", { "kubernetes.io/arch": "amd64" }));
  const gitOverlay = node("east", "gpu-1", {
    "kubernetes.io/arch": "amd64",
    "rlark.io/node-category-cloud": "true",
    "rlark.io/managed-by": "git",
  });
  gitOverlay.metadata.annotations = {
    owner: "team-a",
    "node.kubernetes.io/seen": "yes",
    "rlark.io/overlay-keys": JSON.stringify({
      labels: ["rlark.io/node-category-cloud"],
      annotations: ["owner"],
    }),
  };
  gitOverlay.spec = { unschedulable: true, agentType: "Raw" };
  await store.create(gitOverlay);
  t.same(await desiredForCluster(store, "east", { artifactDir }), [
    {
      apiVersion: "rlinf.io/v1alpha1",
      kind: "Node",
      metadata: {
        name: "gpu-1",
        namespace: "agent-east",
        labels: { "rlark.io/node-category-cloud": "true" },
        annotations: { owner: "team-a" },
      },
      spec: { unschedulable: true },
    },
  ]);
});

t.test("a Raw artifact named by a repository path is served from the hub's artifact store", async (t) => {
  const { store } = tempStore(t);
  const withArtifact = (name: string, url: string): KubeObject => {
    const base = task("east", name);
    const spec = base.spec as { raw: Record<string, unknown> };
    return { ...base, spec: { ...spec, raw: { ...spec.raw, artifact: { url, sha256: "ab".repeat(32) } } } };
  };
  await store.create(withArtifact("from-repo", "bin/train.sh"));
  await store.create(withArtifact("from-web", "https://example.com/train.sh"));
  const artifacts = Object.fromEntries(
    (await desiredForCluster(store, "east", { artifactDir })).map((o) => [o.metadata.name, artifactUrlOf(o)]),
  );
  t.same(artifacts, {
    "from-repo": pathToFileURL(`${artifactDir}/${"ab".repeat(32)}/train.sh`).href,
    "from-web": "https://example.com/train.sh",
  });
  const stored = await store.get("Task", "agent-east", "from-repo");
  t.equal(artifactUrlOf(stored), "bin/train.sh", "the store keeps the repository path");
});
