// SealedSecrets end to end: sealed in git, validated and stored sealed by the hub, opened only in
// the message to a kubernetes agent on a real API server (hack/kube), which applies an Opaque
// Secret with the managed-by label, updates it, prunes it when the SealedSecret goes, and leaves a
// Secret it did not make alone; a process agent is sent none. Then the leak scan: the plain value
// is in none of the git repository (every ref, the status branch too), the API and dashboard
// answers, the hub's and agents' logs, or the SQLite store's files.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { CoreV1Api, type V1Secret } from "@kubernetes/client-node";
import t from "tap";
import { KubernetesRuntime } from "../../../operators/agent/runtimes/kubernetes/index.ts";
import { ProcessRuntime } from "../../../operators/agent/runtimes/process/index.ts";
import {
  kinds,
  MANAGED_BY_AGENT,
  MANAGED_BY_LABEL,
  SEALED_SECRET_LABEL,
} from "../../../operators/api/index.ts";
import type { Logger } from "../../../operators/lib/logger.ts";
import { sealValue, secretValueContext } from "../../../operators/lib/seal/index.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const run = promisify(execFile);
const { kubeConfig: kc } = fleetCluster(0);
const core = kc.makeApiClient(CoreV1Api);

/** Every line a logger was given, as JSON: what a log file would hold. */
function recordingLogger(lines: string[]): Logger {
  const record = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    lines.push(JSON.stringify({ level, message, ...fields }));
  return { info: record("info"), warn: record("warn"), error: record("error") };
}

const CLUSTERS = `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: edge
  labels: { env: lab }
spec:
  runtime: kubernetes
---
apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: bench
  labels: { env: lab }
spec:
  runtime: process
`;

function sealedSecretYaml(
  pem: string,
  target: { name: string; namespace: string; cluster?: string; selector?: Record<string, string> },
  values: Record<string, string>,
): string {
  const sealTarget = target.cluster
    ? { cluster: target.cluster }
    : { clusterSelector: { matchLabels: target.selector } };
  const data = Object.entries(values)
    .map(
      ([k, v]) =>
        `    ${k}: ${sealValue(v, pem, secretValueContext(sealTarget, target.namespace, target.name, k))}`,
    )
    .join("\n");
  return `apiVersion: rlinf.io/v1alpha1
kind: SealedSecret
metadata:
  name: ${target.name}
${target.cluster ? `  namespace: agent-${target.cluster}\n` : ""}spec:
  namespace: ${target.namespace}
${target.selector ? `  clusterSelector: { matchLabels: ${JSON.stringify(target.selector)} }\n` : ""}  encryptedData:
${data}
`;
}

const readSecret = (name: string, namespace: string): Promise<V1Secret | undefined> =>
  core.readNamespacedSecret({ name, namespace }).catch(() => undefined);
const decoded = (secret: V1Secret | undefined, key: string): string | undefined => {
  const value = secret?.data?.[key];
  return value === undefined ? undefined : Buffer.from(value, "base64").toString("utf8");
};

t.test("a SealedSecret from git becomes a kube Secret, and its plain value leaks nowhere else", async (t) => {
  const namespace = await testNamespace(t, kc, "sealed");
  const agentNamespace = await testNamespace(t, kc, "sealed-agent");
  const canary = `canary-${randomBytes(8).toString("hex")}`;
  const canary2 = `canary2-${randomBytes(8).toString("hex")}`;
  const hubLines: string[] = [];
  const agentLines: string[] = [];
  const { git, hub, dataDir } = await startHubOnGit(t, {
    files: { "clusters.yaml": CLUSTERS },
    statusBranch: "rlark/status",
    statusDebounceMs: 50,
    dashboard: true,
    logger: recordingLogger(hubLines),
  });
  const pem = hub.sealKeys.currentPublicKeyPem();
  await waitFor("clusters from git", async () => hub.store.get("Cluster", undefined, "bench"), onKube);

  const runtime = await KubernetesRuntime.start({
    kubeConfig: kc,
    defaultNamespace: agentNamespace,
    instance: `sealed${randomBytes(3).toString("hex")}`,
    retryIntervalMs: 500,
    logger: recordingLogger(agentLines),
  });
  await startAgentOnHub(t, hub, "edge", {
    runtime,
    runtimeKind: "kubernetes",
    reportIntervalMs: 1_000,
    logger: recordingLogger(agentLines),
  });
  const processRuntime = await ProcessRuntime.open({
    stateDir: path.join(await mkdtemp(path.join(tmpdir(), "rlark-sealed-bench-")), "runtime"),
    logger: recordingLogger(agentLines),
  });
  t.teardown(() => processRuntime.stop({ terminatePods: true }));
  const bench = await startAgentOnHub(t, hub, "bench", {
    runtime: processRuntime,
    runtimeKind: "process",
    reportIntervalMs: 1_000,
    logger: recordingLogger(agentLines),
  });

  // One for the edge cluster by its agent namespace, one for every env=lab cluster.
  await git.commit({
    "secrets/db.yaml": sealedSecretYaml(
      pem,
      { name: "db", namespace, cluster: "edge" },
      { password: canary },
    ),
    "secrets/shared.yaml": sealedSecretYaml(
      pem,
      { name: "shared", namespace, selector: { env: "lab" } },
      { token: canary2, "ca.crt": "not-secret" },
    ),
  });
  const db = await waitFor(
    "the Secret db",
    async () =>
      decoded(await readSecret("db", namespace), "password") === canary && readSecret("db", namespace),
    onKube,
  );
  t.equal(db?.type, "Opaque");
  t.equal(db?.metadata?.labels?.[MANAGED_BY_LABEL], MANAGED_BY_AGENT, "the managed-by label");
  t.equal(db?.metadata?.labels?.[SEALED_SECRET_LABEL], "true");
  const shared = await waitFor("the Secret shared", async () => readSecret("shared", namespace), onKube);
  t.equal(decoded(shared, "token"), canary2);
  t.equal(decoded(shared, "ca.crt"), "not-secret");
  t.notOk(
    bench.desired().some((o) => o.kind === "Secret"),
    "the process agent is sent no Secret (its runtime takes none)",
  );
  await waitFor(
    "the hub says why",
    () =>
      hubLines.some(
        (l) =>
          l.includes("not delivered to this cluster") &&
          l.includes('"cluster":"bench"') &&
          l.includes("/shared"),
      ),
    onKube,
  );

  // The key is rotated: the value changed after it is sealed to the new key and applied, the one
  // sealed before (shared) still opens and stays; a Secret the agent did not make is left alone.
  const rotated = await fetch(`${hub.url}/api/v1/seal-key/rotate`, {
    method: "POST",
    headers: { authorization: `Bearer ${hub.adminToken}` },
  });
  t.equal(rotated.status, 200);
  const newPem = hub.sealKeys.currentPublicKeyPem();
  t.not(newPem, pem, "new seals use the new key");
  await core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: "hand-made" }, stringData: { keep: "me" } },
  });
  await git.commit({
    "secrets/db.yaml": sealedSecretYaml(
      newPem,
      { name: "db", namespace, cluster: "edge" },
      { password: `${canary}-v2` },
    ),
    "secrets/hand.yaml": sealedSecretYaml(
      newPem,
      { name: "hand-made", namespace, cluster: "edge" },
      { keep: canary },
    ),
  });
  await waitFor(
    "the new value",
    async () => decoded(await readSecret("db", namespace), "password") === `${canary}-v2`,
    onKube,
  );
  await waitFor(
    "the refusal logged",
    () => agentLines.some((l) => l.includes("hand-made") && l.includes("was not made from a SealedSecret")),
    onKube,
  );
  t.equal(decoded(await readSecret("hand-made", namespace), "keep"), "me", "not taken over");
  t.equal(
    decoded(await readSecret("shared", namespace), "token"),
    canary2,
    "the value sealed to the old key still opens after the rotation",
  );

  // Removed from git: the Secret is pruned; the other stays.
  await git.commit({ "secrets/db.yaml": null, "secrets/hand.yaml": null });
  await waitFor("db pruned", async () => (await readSecret("db", namespace)) === undefined, onKube);
  t.ok(await readSecret("shared", namespace), "the other Secret stays");
  t.ok(await readSecret("hand-made", namespace), "the hand-made Secret stays");

  // The status branch has been written for the revisions above.
  await waitFor(
    "status branch",
    async () => {
      const { stdout } = await run("git", ["-C", git.bare, "branch", "--list", "rlark/status"]);
      return stdout.trim() !== "";
    },
    onKube,
  );

  const needles = [
    canary,
    canary2,
    Buffer.from(canary).toString("base64"),
    Buffer.from(canary2).toString("base64"),
  ];
  const leaks = (where: string, text: string) => {
    for (const needle of needles)
      t.notOk(text.includes(needle), `${where} does not hold ${needle.slice(0, 9)}…`);
  };

  // Every object of every ref, decompressed (packed or loose): git history and the status branch.
  const { stdout: refs } = await run("git", ["-C", git.bare, "for-each-ref", "--format=%(refname)"]);
  t.match(refs, /refs\/heads\/rlark\/status/);
  const { stdout: objects } = await run(
    "git",
    ["-C", git.bare, "cat-file", "--batch-all-objects", "--batch"],
    {
      maxBuffer: 256 * 1024 * 1024,
    },
  );
  t.match(objects, /kind: SealedSecret/, "the scan reads the manifests");
  leaks("the git repository", objects);

  // What the API and the dashboard serve: every kind, each object, the source, the event snapshot.
  const get = async (route: string) =>
    (await fetch(`${hub.url}${route}`, { headers: { authorization: `Bearer ${hub.adminToken}` } })).text();
  let answers = await get("/api/v1/source");
  for (const info of kinds) {
    const list = await get(`/api/v1/rlinf.io/v1alpha1/${info.plural}`);
    answers += list;
    for (const item of (
      JSON.parse(list) as { items: Array<{ metadata: { name: string; namespace?: string } }> }
    ).items) {
      const ns = item.metadata.namespace ? `?namespace=${item.metadata.namespace}` : "";
      answers += await get(`/api/v1/rlinf.io/v1alpha1/${info.plural}/${item.metadata.name}${ns}`);
    }
  }
  t.match(answers, /rlark-sealed:v1:/, "the API serves the sealed values");
  const controller = new AbortController();
  const events = await fetch(`${hub.url}/api/v1/events?token=${hub.adminToken}`, {
    signal: controller.signal,
  });
  const reader = events.body?.getReader();
  let snapshot = "";
  while (reader && !snapshot.includes("\n\n"))
    snapshot += Buffer.from((await reader.read()).value ?? []).toString();
  controller.abort();
  t.match(snapshot, /event: snapshot/);
  leaks("the API and the dashboard's event stream", answers + snapshot);

  leaks("the hub's log", hubLines.join("\n"));
  leaks("the agents' logs", agentLines.join("\n"));
  t.ok(hubLines.length > 0 && agentLines.length > 0, "the logs were recorded");

  // The SQLite store and its write-ahead log, byte for byte.
  const storeFiles = readdirSync(dataDir).filter((f) => f.startsWith("store."));
  t.ok(storeFiles.length > 0, `store files: ${storeFiles.join(", ")}`);
  leaks(
    "the SQLite store",
    storeFiles.map((f) => readFileSync(path.join(dataDir, f)).toString("latin1")).join(""),
  );
});
