// The devinit webhook on a real kube-apiserver: the MutatingWebhookConfiguration of the catalog
// entry (pointed at this test's webhook by URL, limited to this test's namespace so parallel tests
// are untouched), caBundle written by the webhook's own sync, pods created for real.

import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  AdmissionregistrationV1Api,
  ApiException,
  CoreV1Api,
  type V1MutatingWebhookConfiguration,
  type V1Pod,
} from "@kubernetes/client-node";
import t from "tap";
import { startDeviceWebhook, syncCaBundle } from "../../../operators/device/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { openCertificateAuthority } from "../../../operators/lib/pki/index.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";
import { renderWithDefaults } from "./addon-defaults.ts";

const { kubeConfig: kc } = fleetCluster(0);
const core = kc.makeApiClient(CoreV1Api);
const admission = kc.makeApiClient(AdmissionregistrationV1Api);

function pod(name: string, resources?: Record<string, string>): V1Pod {
  return {
    metadata: { name, annotations: { "rlinf.io/device-address": "192.168.10.5/24" } },
    spec: {
      containers: [
        { name: "task", image: "busybox", ...(resources ? { resources: { limits: resources } } : {}) },
      ],
    },
  };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return error instanceof ApiException ? String(error.body) : String(error);
  }
  throw new Error("the pod was admitted");
}

t.test(
  "device pods get devinit, others do not; with the webhook down device pods are refused, others admitted",
  async (t) => {
    const ns = await testNamespace(t, kc, "devhook");
    const dataDir = mkdtempSync(path.join(tmpdir(), "rlark-devhook-"));
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const ca = openCertificateAuthority({ dataDir, commonName: "rlark device webhook CA" });
    const webhook = await startDeviceWebhook({
      host: "127.0.0.1",
      port: 0,
      ca,
      serverNames: ["127.0.0.1"],
      devinit: { image: "rlark/rlark:test", master: "eth0", mode: "bridge" },
      logger: silentLogger,
    });
    let webhookUp = true;
    t.teardown(() => (webhookUp ? webhook.stop() : undefined));

    const shipped = renderWithDefaults("rlark-system").find(
      (o) => o.object.kind === "MutatingWebhookConfiguration",
    );
    const config = structuredClone(shipped?.object) as V1MutatingWebhookConfiguration;
    const name = `rlark-device-webhook-${randomBytes(4).toString("hex")}`;
    config.metadata = { name };
    for (const hook of config.webhooks ?? []) {
      hook.clientConfig = { url: `${webhook.url}/mutate` };
      hook.namespaceSelector = { matchLabels: { "kubernetes.io/metadata.name": ns } };
    }
    await admission.createMutatingWebhookConfiguration({ body: config });
    t.teardown(() => admission.deleteMutatingWebhookConfiguration({ name }).catch(() => undefined));
    t.equal(await syncCaBundle(kc, name, webhook.caPem), 1, "the webhook writes its CA into caBundle");
    t.equal(await syncCaBundle(kc, name, webhook.caPem), 0, "and leaves it alone once current");

    // The apiserver may take a moment to see a new configuration: wait for the first mutation.
    let n = 0;
    const mutated = await waitFor(
      "a device pod mutated",
      async () => {
        const created = await core.createNamespacedPod({
          namespace: ns,
          body: pod(`arm-${n++}`, { "rlinf.io/device": "1" }),
        });
        return created.spec?.initContainers?.length ? created : undefined;
      },
      onKube,
    );
    t.match(mutated.spec?.initContainers, [
      {
        name: "devinit",
        image: "rlark/rlark:test",
        args: ["devinit"],
        env: [
          { name: "RLARK_MACVLAN_MASTER", value: "eth0" },
          { name: "RLARK_MACVLAN_MODE", value: "bridge" },
          { name: "RLARK_MACVLAN_ADDRESS", value: "192.168.10.5/24" },
        ],
        resources: { limits: { "rlinf.io/device": "1" }, requests: { "rlinf.io/device": "1" } },
        securityContext: { capabilities: { add: ["NET_ADMIN"], drop: ["ALL"] } },
      },
    ]);
    t.equal(mutated.spec?.initContainers?.length, 1);

    const plain = await core.createNamespacedPod({ namespace: ns, body: pod("plain") });
    t.equal(plain.spec?.initContainers, undefined, "a pod without the device is not touched");

    await webhook.stop();
    webhookUp = false;
    const refused = await refusal(
      core.createNamespacedPod({ namespace: ns, body: pod("arm-down", { "rlinf.io/device": "2" }) }),
    );
    t.match(
      refused,
      /failed calling webhook \\"devinit\.rlinf\.io\\"/,
      "failurePolicy Fail: refused, naming the webhook",
    );
    const other = await core.createNamespacedPod({ namespace: ns, body: pod("plain-down") });
    t.equal(other.metadata?.name, "plain-down", "matchConditions keep other pods away from the down webhook");
  },
);

t.test("the webhook answers only well-formed AdmissionReviews over TLS, bounded", async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "rlark-devhook-"));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const ca = openCertificateAuthority({ dataDir });
  const webhook = await startDeviceWebhook({
    host: "127.0.0.1",
    port: 0,
    ca,
    serverNames: ["127.0.0.1"],
    devinit: { image: "i", master: "eth0", mode: "bridge" },
    logger: silentLogger,
  });
  t.teardown(() => webhook.stop());
  const { Agent, request } = await import("node:https");
  const agent = new Agent({ ca: webhook.caPem });
  const post = (body: string | Buffer, pathName = "/mutate") =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${webhook.url}${pathName}`, { method: "POST", agent }, (res) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on("error", reject);
      req.end(body);
    });
  t.match(await post("{"), { status: 400 });
  t.match(await post(JSON.stringify({ apiVersion: "v1", kind: "Pod" })), {
    status: 400,
    body: /expected apiVersion admission.k8s.io\/v1, kind AdmissionReview/,
  });
  t.match(await post("x", "/other"), { status: 404 });
  const big = await post(Buffer.alloc(4 * 1024 * 1024, 32)).catch((error: Error) => ({
    status: 0,
    body: error.message,
  }));
  t.not(big.status, 200, "a body over 3 MiB is not read to its end");
  const answer = await post(
    JSON.stringify({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: { uid: "u1", kind: { kind: "Pod" }, object: pod("x") },
    }),
  );
  t.same(JSON.parse(answer.body), {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: { uid: "u1", allowed: true },
  });
});
