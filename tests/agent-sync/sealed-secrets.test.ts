// Which SealedSecrets a cluster's agent gets, opened, from a real store: its own namespace's, and
// cluster-wide ones whose selector matches its labels (its own wins for the same target); one with
// a value the hub no longer opens is left out and logged without the value.
import path from "node:path";
import t from "tap";
import { secretsForCluster } from "../../operators/agent-sync/sealed-secrets.ts";
import { SealKeyring, sealValue, secretValueContext } from "../../operators/lib/seal/index.ts";
import type { KubeObject } from "../../operators/lib/store/index.ts";
import { tempStore } from "../lib/store/helpers.ts";
import { cluster, recordingLogger } from "./fixtures.ts";

function sealedSecret(
  pem: string,
  name: string,
  where: { namespace?: string; selector?: Record<string, string> },
  value: string,
): KubeObject {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "SealedSecret",
    metadata: { name, ...(where.namespace ? { namespace: where.namespace } : {}) },
    spec: {
      namespace: "ml",
      ...(where.selector ? { clusterSelector: { matchLabels: where.selector } } : {}),
      encryptedData: {
        k: sealValue(
          value,
          pem,
          secretValueContext(
            where.namespace
              ? { cluster: where.namespace.slice("agent-".length) }
              : { clusterSelector: { matchLabels: where.selector } },
            "ml",
            name,
            "k",
          ),
        ),
      },
    },
  };
}

const plain = (secret: KubeObject) =>
  Buffer.from((secret as unknown as { data: { k: string } }).data.k, "base64").toString();

t.test(
  "a cluster gets its own and its matching cluster-wide SealedSecrets, opened into v1 Secrets",
  async (t) => {
    const { store } = tempStore(t);
    const keys = await SealKeyring.open(path.join(t.testdir(), "seal"));
    const other = await SealKeyring.open(path.join(t.testdir(), "other"));
    const pem = keys.currentPublicKeyPem();
    await store.create(cluster("a", { env: "lab" }));
    await store.create(cluster("b", { env: "prod" }));
    await store.create(sealedSecret(pem, "own", { namespace: "agent-a" }, "own-a"));
    await store.create(sealedSecret(pem, "elsewhere", { namespace: "agent-b" }, "own-b"));
    await store.create(sealedSecret(pem, "lab", { selector: { env: "lab" } }, "lab-wide"));
    await store.create(sealedSecret(pem, "own", { selector: { env: "lab" } }, "wide-loses"));
    await store.create(
      sealedSecret(other.currentPublicKeyPem(), "lost", { namespace: "agent-a" }, "lost-key"),
    );
    const logger = recordingLogger();

    const secrets = await secretsForCluster(store, "a", { keys, logger });
    t.same(
      secrets.map((s) => [s.apiVersion, s.kind, s.metadata.namespace, s.metadata.name, plain(s)]).sort(),
      [
        ["v1", "Secret", "ml", "lab", "lab-wide"],
        ["v1", "Secret", "ml", "own", "own-a"],
      ],
      "its own wins over a cluster-wide one of the same target; another cluster's is not sent",
    );
    t.match(secrets[0], { type: "Opaque" });
    t.match(logger.lines, [
      {
        level: "error",
        message: /does not open; the Secret is not delivered/,
        fields: { sealedSecret: "agent-a/lost", key: "k" },
      },
    ]);
    t.notMatch(JSON.stringify(logger.lines), /lost-key/);
    t.same(
      (await secretsForCluster(store, "b", { keys, logger })).map((s) => s.metadata.name),
      ["elsewhere"],
    );
  },
);
