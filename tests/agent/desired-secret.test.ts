// The agent's check of a Secret from the hub: place, type and base64 data, refused at the field
// and never with the value in the message.
import t from "tap";
import { refusal } from "../../operators/agent/desired-objects.ts";
import type { KubeObject } from "../../operators/lib/kube-object.ts";

const secret = (changes: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}): KubeObject =>
  ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "registry", namespace: "ml", ...metadata },
    type: "Opaque",
    data: { password: Buffer.from("hidden-value").toString("base64") },
    ...changes,
  }) as KubeObject;

t.test(
  "a well-formed Opaque Secret is taken; a malformed one is refused at its field, value unnamed",
  async (t) => {
    t.equal(refusal(secret()), undefined);
    t.equal(refusal(secret({ data: {} })), undefined, "no keys is a Secret too");
    const cases: Array<[KubeObject, string]> = [
      [secret({}, { name: "Bad_Name" }), "/metadata/name"],
      [secret({}, { namespace: undefined }), "/metadata/namespace"],
      [secret({}, { namespace: "x".repeat(64) }), "/metadata/namespace"],
      [secret({ type: "kubernetes.io/tls" }), "/type"],
      [secret({ data: ["a"] }), "/data"],
      [secret({ data: { "bad key": "aGk=" } }), "/data"],
      [secret({ data: { password: "hidden-value!" } }), "/data/password"],
      [secret({ data: { password: 42 } }), "/data/password"],
      [secret({ data: { big: Buffer.alloc(1024 * 1024 + 1).toString("base64") } }), "/data"],
    ];
    for (const [object, field] of cases) {
      const refused = refusal(object);
      t.equal(refused?.field, field, field);
      t.notMatch(JSON.stringify(refused), /hidden-value/);
    }
    t.match(
      refusal({ ...secret(), apiVersion: "v2" } as KubeObject),
      { field: "/kind" },
      "only core v1 Secrets",
    );
  },
);
