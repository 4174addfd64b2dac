// The Secret rlark-domain-peers as the agent writes it and as `--peers-secret` reads it back: the
// nodeserver's own PeersState, and content that is not a valid state refused naming the field. (The
// watch through a real API server: tests/e2e/hub-agent/domain-kubernetes.test.ts.)
import t from "tap";
import { domainPeersSecret } from "../../operators/agent/runtimes/kubernetes/index.ts";
import {
  type DomainPeerSpec,
  domainTasksFrom,
  type PeersState,
  parsePeersState,
  peersStateFrom,
} from "../../operators/api/index.ts";
import { parsePeersSecret } from "../../operators/network/peers-from-secret.ts";
import { parseSecretRef } from "../../operators/network/secret-ref.ts";

const spec = (ip: string): DomainPeerSpec => ({
  cert: "CERT",
  key: "KEY",
  prefixLen: 24,
  pods: [{ name: "a-0", namespace: "ml", ip, globalNamespace: "agent-gpu" }],
});
const encode = (value: unknown) => ({ "peers.json": Buffer.from(JSON.stringify(value)).toString("base64") });

const state = (...domains: string[]): PeersState => ({
  globalNamespace: "agent-gpu",
  hub: { address: "hub.example:2223", caPem: "CA" },
  domains: domains.map((domain, i) => ({ domain, ...spec(`10.0.${i}.2`) })),
});

t.test("what the agent writes is what the nodeserver reads: the one PeersState shape", async (t) => {
  const written = peersStateFrom(
    [
      { domain: "zeta", spec: spec("10.0.2.2") },
      { domain: "alpha", spec: spec("10.0.1.2") },
    ],
    "agent-gpu",
    { address: "hub.example:2223", caPem: "CA" },
  );
  t.same(
    written.domains.map((d) => d.domain),
    ["alpha", "zeta"],
    "Domains in name order",
  );
  const secret = domainPeersSecret("rlark-system", written);
  t.equal(secret.metadata?.name, "rlark-domain-peers");
  t.equal(secret.metadata?.namespace, "rlark-system");
  t.same(Object.keys(secret.data ?? {}), ["peers.json"]);
  t.same(parsePeersSecret(secret.data), written, "read back as written, relay and CA included");
  t.same(
    parsePeersState(Buffer.from(secret.data?.["peers.json"] ?? "", "base64").toString(), "peers.json"),
    written,
    "the same text a process runtime's peers.json file holds",
  );
  t.same(parsePeersSecret(undefined).domains, [], "no Secret: no Domains");
});

// The Domain's Task addresses are the runtime's, not the nodeservers': a state that carried them
// was never read back equal (the reader keeps only the fields it knows), so a Secret was rewritten
// on every pass.
t.test("the Tasks' addresses stay out of the peers state and reach the runtime apart", async (t) => {
  const withTasks = (domain: string, ip: string) => ({
    domain,
    spec: { ...spec(ip), tasks: [{ name: "ray-head", ips: ["100.64.0.2"] }] },
  });
  const peers = [withTasks("zeta", "10.0.2.2"), withTasks("alpha", "10.0.1.2")];
  const written = peersStateFrom(peers, "agent-gpu");
  for (const d of written.domains) t.notOk("tasks" in d, `${d.domain}: no tasks in the nodeservers' state`);
  t.same(parsePeersSecret(domainPeersSecret("rlark-system", written).data), written, "read back as written");
  t.same(domainTasksFrom(peers), [
    { domain: "alpha", tasks: [{ name: "ray-head", ips: ["100.64.0.2"] }] },
    { domain: "zeta", tasks: [{ name: "ray-head", ips: ["100.64.0.2"] }] },
  ]);
  t.same(
    domainTasksFrom([{ domain: "d", spec: spec("10.0.0.2") }]),
    [{ domain: "d", tasks: [] }],
    "none: []",
  );
});

t.test("a bad Secret is refused with the field named", async (t) => {
  t.throws(
    () => parsePeersSecret({ "peers.json": Buffer.from("{").toString("base64") }),
    /peers\.json: \(file\): not JSON/,
  );
  t.throws(() => parsePeersSecret(encode([])), /globalNamespace: must be a non-empty string/);
  const lab = state("lab");
  t.throws(
    () => parsePeersSecret(encode({ ...lab, domains: [{ ...lab.domains[0], prefixLen: 40 }] })),
    /domains\[0\]\.prefixLen: must be an integer from 8 to 30/,
  );
  t.throws(
    () =>
      parsePeersSecret(
        encode({ ...lab, domains: [{ ...lab.domains[0], pods: [{ name: "a", ip: "nope" }] }] }),
      ),
    /domains\[0\]\.pods\[0\]\.ip: "nope" is not an IPv4 address/,
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
