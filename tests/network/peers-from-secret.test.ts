// The Secret rlark-domain-peers as the agent writes it and as `--peers-secret` reads it back: the
// same state, and content that is not a valid state refused naming the Domain and field. (The
// watch through a real API server: tests/e2e/hub-agent/domain-kubernetes.test.ts.)
import t from "tap";
import { domainPeersSecret } from "../../operators/agent/runtimes/kubernetes/index.ts";
import type { DomainPeerSpec } from "../../operators/api/index.ts";
import { parsePeersSecret, parseSecretRef } from "../../operators/network/peers-from-secret.ts";

const spec = (ip: string): DomainPeerSpec => ({
  cert: "CERT",
  key: "KEY",
  prefixLen: 24,
  pods: [{ name: "a-0", namespace: "ml", ip, globalNamespace: "agent-gpu" }],
});
const encode = (value: unknown) => ({ "peers.json": Buffer.from(JSON.stringify(value)).toString("base64") });

t.test("what the agent writes is what the nodeserver reads, Domains in name order", async (t) => {
  const secret = domainPeersSecret("rlark-system", [
    { domain: "zeta", spec: spec("10.0.2.2") },
    { domain: "alpha", spec: spec("10.0.1.2") },
  ]);
  t.equal(secret.metadata?.name, "rlark-domain-peers");
  t.equal(secret.metadata?.namespace, "rlark-system");
  t.same(Object.keys(secret.data ?? {}), ["peers.json"]);
  const state = parsePeersSecret(secret.data);
  t.same(Object.keys(state), ["alpha", "zeta"]);
  t.same(state.alpha, spec("10.0.1.2"));
  t.same(parsePeersSecret(undefined), {}, "no Secret: no Domains");
});

t.test("a bad Secret is refused with the Domain and field named", async (t) => {
  t.throws(
    () => parsePeersSecret({ "peers.json": Buffer.from("{").toString("base64") }),
    /peers\.json is not JSON/,
  );
  t.throws(() => parsePeersSecret(encode([])), /must be an object of DomainPeer specs/);
  t.throws(
    () => parsePeersSecret(encode({ lab: { ...spec("10.0.1.2"), prefixLen: 40 } })),
    /Domain "lab": spec\/prefixLen/,
  );
  t.throws(
    () => parsePeersSecret(encode({ lab: { ...spec("10.0.1.2"), pods: [{ name: "a", ip: "nope" }] } })),
    /Domain "lab": spec\/pods\/0\/ip/,
  );
  t.throws(
    () => parsePeersSecret(encode({ "Not A Name": spec("10.0.1.2") })),
    /Domain "Not A Name": the name/,
  );
  t.throws(
    () => parsePeersSecret({ "peers.json": Buffer.alloc(1024 * 1024 + 1, 32).toString("base64") }),
    /larger than 1048576 bytes/,
  );
});

t.test("--peers-secret takes <namespace>/<name>", async (t) => {
  t.same(parseSecretRef("rlark-system/rlark-domain-peers"), {
    namespace: "rlark-system",
    name: "rlark-domain-peers",
  });
  for (const bad of ["rlark-domain-peers", "a/b/c", "/x", "NS/x"])
    t.throws(() => parseSecretRef(bad), /--peers-secret must be <namespace>\/<name>/, bad);
});
