// Issue 31, item 3: a committer moves a SealedSecret sealed for one cluster to another (its
// metadata.namespace agent-lab becomes agent-beijing, or its clusterSelector another cluster's
// labels) to have the hub open the value there. The value is sealed for its clusters, so the hub
// refuses the revision at the field with a hint to seal again, keeps the last good one, and the
// Secrets it would send beijing's agent never hold the value, even when the moved object reaches
// the store some other way.
import t from "tap";
import { secretsForCluster } from "../../operators/agent-sync/sealed-secrets.ts";
import type { KubeObject } from "../../operators/lib/store/index.ts";
import { recordingLogger } from "../agent-sync/fixtures.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rlark } from "../helpers/rlark-cli.ts";
import { refusedRevision } from "../helpers/source-status.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const CANARY = "swap-canary-7f3a9c1e";

const CLUSTERS = `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: lab, labels: { env: lab } }
spec: { runtime: kubernetes }
---
apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: beijing, labels: { env: prod } }
spec: { runtime: kubernetes }
`;

t.test("a SealedSecret moved to another cluster is refused and never opened there", async (t) => {
  const { hub, git } = await startHubOnGit(t, { files: { "clusters.yaml": CLUSTERS }, intervalMs: 100 });
  const seal = async (...target: string[]) => {
    const sealed = await rlark(
      [
        "seal",
        "--hub-key",
        hub.url,
        "--token",
        hub.adminToken,
        "--secret",
        "db",
        "--namespace",
        "ml",
        ...target,
        "--from-file",
        "password=-",
      ],
      { input: CANARY },
    );
    t.equal(sealed.code, 0, sealed.stderr);
    return sealed.stdout;
  };
  const logger = recordingLogger();
  const opened = async (cluster: string) =>
    (await secretsForCluster(hub.store, cluster, { keys: hub.sealKeys, logger })).map((secret) =>
      Buffer.from((secret as unknown as { data: { password: string } }).data.password, "base64").toString(),
    );
  const refused = (revision: string) => refusedRevision(hub, revision);

  // sealed for lab by its agent namespace, delivered to lab
  const forLab = await seal("--cluster", "lab");
  t.match(forLab, /namespace: agent-lab/);
  await git.commit({ "secrets/db.yaml": forLab });
  await waitFor(
    "lab's SealedSecret applied",
    async () => hub.store.get("SealedSecret", "agent-lab", "db"),
    onRealServers,
  );
  t.same(await opened("lab"), [CANARY], "lab's agent gets the value");

  // the attack: the same file with only metadata.namespace changed
  const swapped = forLab.replace("namespace: agent-lab", "namespace: agent-beijing");
  const attack = await git.commit({ "secrets/db.yaml": swapped });
  const namespaceSwap = await refused(attack);
  t.match(namespaceSwap.errors, [
    {
      file: "secrets/db.yaml",
      line: 9,
      path: "/spec/encryptedData/password",
      rule: "cross/sealed-value",
      message: /does not open on this hub: .*seal it again/,
    },
  ]);
  t.equal(namespaceSwap.errors?.length, 1);
  t.equal(
    await hub.store.get("SealedSecret", "agent-beijing", "db"),
    undefined,
    "nothing for beijing in the store",
  );
  t.ok(await hub.store.get("SealedSecret", "agent-lab", "db"), "the last good revision stays");
  t.same(await opened("beijing"), [], "beijing's agent gets nothing");
  t.same(await opened("lab"), [CANARY]);

  // the same with a selector: sealed for env=lab, pointed at env=prod (beijing)
  const forLabs = await seal("--cluster-selector", "env=lab");
  const toProd = forLabs.replace("env: lab", "env: prod");
  t.not(toProd, forLabs);
  const selectorSwap = await refused(await git.commit({ "secrets/db.yaml": toProd }));
  t.match(selectorSwap.errors, [{ file: "secrets/db.yaml", path: "/spec/encryptedData/password" }]);
  t.same(await opened("beijing"), [], "beijing's agent gets nothing");

  // a moved object that reaches the store without validation (an older hub applied it) is still
  // not opened for beijing: delivery opens for the cluster the object names
  const moved = structuredClone(await hub.store.get("SealedSecret", "agent-lab", "db")) as KubeObject;
  await hub.store.create({
    apiVersion: moved.apiVersion,
    kind: moved.kind,
    metadata: { name: "db", namespace: "agent-beijing" },
    spec: moved.spec,
  });
  t.same(await opened("beijing"), [], "not delivered");
  t.match(logger.lines, [
    { message: /does not open; the Secret is not delivered/, fields: { sealedSecret: "agent-beijing/db" } },
  ]);
  t.notMatch(JSON.stringify([logger.lines, namespaceSwap, selectorSwap]), CANARY);
});
