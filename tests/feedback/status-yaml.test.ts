import t from "tap";
import { renderStatusYaml, statusDocumentPath } from "../../operators/feedback/index.ts";

t.test("status YAML has sorted keys at every level, whatever the insertion order", async (t) => {
  const a = renderStatusYaml({
    status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
    kind: "Job",
  });
  const b = renderStatusYaml({
    kind: "Job",
    status: { conditions: [{ status: "True", type: "Ready" }], phase: "Running" },
  });
  t.equal(a, b);
  t.equal(
    a,
    'kind: Job\nstatus:\n  conditions:\n    - status: "True"\n      type: Ready\n  phase: Running\n',
  );
});

t.test("secrets are left out of status YAML by key name and by PEM content", async (t) => {
  const yaml = renderStatusYaml(
    {
      kind: "DomainPeer",
      spec: {
        certificate: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        key: "-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----\n",
        token: "abc",
        adminPassword: "hunter2",
        webhookSecret: "s",
        selector: { matchExpressions: [{ key: "rlark.io/city", operator: "In", values: ["beijing"] }] },
      },
      internal: { drop: true, keep: 1 },
    },
    { dropKey: (_key, path) => path === "internal.drop" },
  );
  t.notMatch(yaml, /PRIVATE KEY|MHcC|hunter2|abc|webhookSecret|token|drop/);
  t.match(yaml, /BEGIN CERTIFICATE/, "public material stays");
  t.match(yaml, /key: rlark.io\/city/, "a plain `key` field (label selectors) stays");
  t.match(yaml, /keep: 1/);
});

t.test("status document paths are status/<kind>/<name>.yaml and cannot escape", async (t) => {
  t.equal(statusDocumentPath("Job", "train"), "status/job/train.yaml");
  t.equal(statusDocumentPath("Node", "gpu-1", "agent-beijing"), "status/node/agent-beijing/gpu-1.yaml");
  t.equal(statusDocumentPath("Job", "..", ".."), "status/job/_/_.yaml");
  t.equal(statusDocumentPath("Job", "a/b"), "status/job/a_b.yaml");
});
