// Kubeconfigs of registered (agentless) clusters: an admin pastes them, the hub reads them.
import fc from "fast-check";
import { stringify } from "yaml";
import { kubeConfigFrom } from "../../../operators/agent/agentless/index.ts";
import { validAndBroken } from "../schema-arbitrary.ts";
import { clearly, type FuzzTarget, flip } from "../target.ts";

const name = fc.constantFrom("c", "u", "x");
const config = fc.record({
  apiVersion: fc.constant("v1"),
  kind: fc.constant("Config"),
  "current-context": name,
  clusters: fc.array(
    fc.record({
      name,
      cluster: fc.record(
        {
          server: fc.oneof(fc.constant("https://127.0.0.1:6443"), fc.webUrl(), fc.string()),
          "certificate-authority-data": fc.base64String({ maxLength: 40 }),
          "insecure-skip-tls-verify": fc.boolean(),
          "certificate-authority": fc.string(),
          "proxy-url": fc.webUrl(),
        },
        { requiredKeys: ["server"] },
      ),
    }),
    { maxLength: 2 },
  ),
  users: fc.array(
    fc.record({
      name,
      user: fc.record(
        {
          token: fc.string(),
          "client-certificate-data": fc.base64String({ maxLength: 40 }),
          "client-key-data": fc.base64String({ maxLength: 40 }),
          exec: fc.record({ command: fc.string(), apiVersion: fc.string() }),
          "auth-provider": fc.record({ name: fc.string() }),
          tokenFile: fc.string(),
          username: fc.string(),
          password: fc.string(),
        },
        { requiredKeys: [] },
      ),
    }),
    { maxLength: 2 },
  ),
  contexts: fc.array(
    fc.record({ name, context: fc.record({ cluster: name, user: name, namespace: fc.string() }) }),
    {
      maxLength: 2,
    },
  ),
});
const text = fc.oneof(
  { weight: 6, arbitrary: validAndBroken(config).map((c) => stringify(c)) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(config, fc.nat(), fc.constantFrom(0x3a, 0x2d, 0x0a, 0x26, 0x2a, 0x00))
      .map(([c, at, b]) => flip(stringify(c), at, b).toString("utf8")),
  },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 200 }) },
);

export const kubeconfig: FuzzTarget<string> = {
  name: "kubeconfig",
  about: "kubeconfigs of registered clusters: agent/agentless kubeConfigFrom",
  input: text,
  async run(t) {
    await clearly(() => kubeConfigFrom(t));
  },
};
