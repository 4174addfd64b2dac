// The redactor of an agentless cluster's errors: each credential of the kubeconfig's user, its
// Basic encoding and decoded client key, also where a one-line error was cut off inside one.
import t from "tap";
import { kubeConfigFrom } from "../../../operators/agent/agentless/index.ts";
import {
  credentialRedactor,
  redactingDryRun,
  redactingLogger,
  redactingRuntime,
} from "../../../operators/agent/agentless/redact-credentials.ts";
import type { Runtime } from "../../../operators/agent/runtimes/types.ts";

const TOKEN = "tok-0123456789abcdef";
const KEY_PEM =
  "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIBnOwBhCZ8bD6N4Nf1Q8cM4A3nq0n0m9k7e3f5c4b2a1\n-----END PRIVATE KEY-----\n";

const kubeconfig = (user: string) => `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://10.0.0.1:6443" } }]
users: [{ name: u, user: ${user} }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;

t.test("tokens, passwords and keys are redacted, whole or cut off", async (t) => {
  const redact = credentialRedactor(kubeConfigFrom(kubeconfig(`{ token: ${TOKEN} }`)));
  t.equal(redact(`401: bad Bearer ${TOKEN} here`), "401: bad Bearer [redacted] here");
  t.equal(redact(`cut at Bearer ${TOKEN.slice(0, 9)}…`), "cut at Bearer [redacted]…", "a cut-off token");
  t.equal(redact("tok-01 is not enough to tell"), "tok-01 is not enough to tell");

  const basic = credentialRedactor(kubeConfigFrom(kubeconfig("{ username: admin, password: hunter2-pw }")));
  const encoded = Buffer.from("admin:hunter2-pw").toString("base64");
  t.equal(basic(`Basic ${encoded} / hunter2-pw`), "Basic [redacted] / [redacted]");

  const keyData = Buffer.from(KEY_PEM).toString("base64");
  const client = credentialRedactor(
    kubeConfigFrom(kubeconfig(`{ client-certificate-data: Y2VydA==, client-key-data: ${keyData} }`)),
  );
  const line = KEY_PEM.split("\n")[1] as string;
  t.notMatch(client(`echo ${keyData} and ${line}`), new RegExp(`${line}|${keyData.slice(0, 20)}`));
});

t.test("a redacting logger redacts messages and fields", async (t) => {
  const seen: unknown[] = [];
  const redact = credentialRedactor(kubeConfigFrom(kubeconfig(`{ token: ${TOKEN} }`)));
  const logger = redactingLogger(
    { info: (...a) => seen.push(a), warn: (...a) => seen.push(a), error: (...a) => seen.push(a) },
    redact,
  );
  logger.warn(`m ${TOKEN}`, { error: `e ${TOKEN}`, nested: { body: TOKEN }, n: 1, err: new Error(TOKEN) });
  t.notMatch(JSON.stringify(seen), TOKEN);
  t.match(seen, [["m [redacted]", { error: "e [redacted]", n: 1, err: "[redacted]" }]]);
});

t.test("a redacting runtime redacts what its facets reject with too", async (t) => {
  const redact = credentialRedactor(kubeConfigFrom(kubeconfig(`{ token: ${TOKEN} }`)));
  const refuse = async (): Promise<never> => {
    throw new Error(`401: Bearer ${TOKEN}`);
  };
  const runtime: Runtime = {
    agentTypes: ["Kubernetes"],
    apply: refuse,
    observe: () => ({ nodes: [], pods: [] }),
    onChange: () => () => {},
    logStream: refuse,
    stop: async () => {},
    network: { applyPeersState: refuse },
    cluster: { applyNodeOverlays: refuse, applyAddons: refuse, applySecrets: refuse, browse: refuse },
  };
  const redacting = redactingRuntime(runtime, redact);
  const bare = "401: Bearer [redacted]";
  await t.rejects(redacting.apply([]), { message: bare }, "the workloads part");
  await t.rejects(async () => redacting.cluster?.applySecrets([]), { message: bare }, "the cluster facet");
  await t.rejects(async () => redacting.cluster?.browse({ resource: "pods", limit: 1 }), { message: bare });
  await t.rejects(async () => redacting.network?.applyPeersState({ domains: [] } as never), {
    message: bare,
  });
});

t.test("a plan's dry-run answers and errors from an agentless cluster are redacted", async (t) => {
  const redact = credentialRedactor(kubeConfigFrom(kubeconfig(`{ token: ${TOKEN} }`)));
  const request = {
    object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "b" } },
  };
  const failed = redactingDryRun(
    async () => ({ state: "failed", message: `denied for Bearer ${TOKEN}` }),
    redact,
  );
  t.same(await failed(request), { state: "failed", message: "denied for Bearer [redacted]" });
  const findings = redactingDryRun(
    async () => ({ state: "passed", schema: [`/data/${TOKEN}: unknown field`] }),
    redact,
  );
  t.same(await findings(request), { state: "passed", schema: ["/data/[redacted]: unknown field"] });
  const thrown = redactingDryRun(async () => {
    throw new Error(`connect failed with ${TOKEN}`);
  }, redact);
  await t.rejects(thrown(request), { message: "connect failed with [redacted]" });
});
