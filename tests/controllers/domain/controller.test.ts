import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import type { Domain, DomainPeer, Pod } from "../../../operators/api/index.ts";
import { createDomainController } from "../../../operators/controllers/domain/index.ts";
import { systemClock } from "../../../operators/lib/clock.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { generateKeyPair, openCertificateAuthority, publicKeyPem } from "../../../operators/lib/pki/index.ts";
import { modify, openSqliteStore } from "../../../operators/lib/store/index.ts";
import { waitFor } from "../../helpers/wait-for.ts";
import { allocations, domain, job, peers, pod, startDomainHarness, tempDataDir } from "./fixtures.ts";

const count = (o: Record<string, string>) => Object.keys(o).length;

t.test("pods of the Domain's Jobs get addresses; one DomainPeer per cluster lists its pods", async (t) => {
  const hub = await startDomainHarness(t, tempDataDir(t));
  const { store } = hub;
  await store.create(domain("ppo", "10.0.1.0/24"));
  await store.create(job("train", "ppo"));
  await store.create(job("other"));
  await store.create(pod("beijing", "actor-0", "train", "actor", { podIP: "172.17.0.5", node: "gpu-1" }));
  await store.create(pod("shanghai", "env-0", "train", "env", { podIP: "10.244.1.9", node: "edge-1" }));
  await store.create(pod("beijing", "x-0", "other", "x"));

  const ips = await waitFor("two allocations", async () => {
    const a = await allocations(store, "ppo");
    return count(a) === 2 ? a : undefined;
  });
  t.same(
    ips,
    { "beijing/actor-0": "10.0.1.1", "shanghai/env-0": "10.0.1.2" },
    "the other Job's pod gets none",
  );
  const d = await store.get<Domain>("Domain", "", "ppo");
  t.match(d?.status?.ipAllocations, [
    { ip: "10.0.1.1", job: "train", task: "actor", pod: "actor-0", cluster: "beijing" },
  ]);
  t.match(d?.status?.conditions, [
    { type: "AddressPoolExhausted", status: "False" },
    { type: "Ready", status: "True" },
  ]);

  const byCluster = await waitFor("two peers", async () => {
    const p = await peers(store, "ppo");
    return p.size === 2 ? p : undefined;
  });
  const beijing = byCluster.get("agent-beijing") as DomainPeer;
  t.same(beijing.spec.pods, [
    {
      name: "actor-0",
      ip: "10.0.1.1",
      globalNamespace: "agent-beijing",
      namespace: "rlark-system",
      uid: "uid-beijing-actor-0",
      localIP: "172.17.0.5",
      node: "gpu-1",
    },
  ]);
  t.equal(beijing.spec.prefixLen, 24);
  t.equal(
    d?.status?.certificate,
    `${beijing.spec.cert}${byCluster.get("agent-shanghai")?.spec.cert}`,
    "Domain status shows each cluster's certificate, in cluster order",
  );
  t.not(beijing.spec.key, byCluster.get("agent-shanghai")?.spec.key, "each cluster has its own key");
  t.match(beijing.metadata.labels, { "rlark.io/domain": "ppo" });
  t.match(beijing.metadata.ownerReferences, [{ kind: "Domain", name: "ppo", uid: d?.metadata.uid }]);
  t.same(
    byCluster.get("agent-shanghai")?.spec.pods?.map((p) => [p.name, p.ip]),
    [["env-0", "10.0.1.2"]],
  );

  // A new pod in shanghai and a changed local IP update the peers.
  await store.create(pod("shanghai", "env-1", "train", "env", { podIP: "10.244.1.10" }));
  await modify<Pod>(
    store,
    "Pod",
    "agent-beijing",
    "actor-0",
    (p) => {
      p.status = { ...p.status, podIP: "172.17.0.99" };
    },
    { status: true },
  );
  await waitFor("shanghai peer has two pods", async () => {
    const p = (await peers(store, "ppo")).get("agent-shanghai");
    return p?.spec.pods?.length === 2;
  });
  await waitFor("beijing peer has the new local IP", async () => {
    const p = (await peers(store, "ppo")).get("agent-beijing");
    return p?.spec.pods?.[0]?.localIP === "172.17.0.99";
  });

  // The last pods of shanghai go: its DomainPeer goes, its addresses are released.
  await store.delete("Pod", "agent-shanghai", "env-0");
  await store.delete("Pod", "agent-shanghai", "env-1");
  await waitFor("shanghai peer deleted", async () => !(await peers(store, "ppo")).has("agent-shanghai"));
  t.same(await allocations(store, "ppo"), { "beijing/actor-0": "10.0.1.1" });
  t.ok((await peers(store, "ppo")).has("agent-beijing"), "beijing keeps its peer");
});

t.test(
  "a cluster's certificate names it, signed by the hub CA; the key stays out of Domain status",
  async (t) => {
    const dataDir = tempDataDir(t);
    const { store, pki } = await startDomainHarness(t, dataDir);
    await store.create(domain("nav", "10.9.0.0/16"));
    await store.create(job("j", "nav"));
    await store.create(pod("beijing", "p-0", "j", "t"));
    const peer = await waitFor("peer", async () => (await peers(store, "nav")).get("agent-beijing"));
    const identity = pki.verify(peer.spec.cert, { role: "domain", cluster: "beijing" });
    t.equal(identity.name, "nav");
    t.equal(identity.publicKeyPem, publicKeyPem(peer.spec.key), "the peer's key is the certified key");
    const keyPath = join(dataDir, "pki", "domains", "nav", "beijing.key");
    t.equal(statSync(keyPath).mode & 0o777, 0o600);
    t.equal(readFileSync(keyPath, "utf8"), peer.spec.key);
    const d = await store.get<Domain>("Domain", "", "nav");
    t.equal(d?.status?.certificate, peer.spec.cert);
    t.notMatch(JSON.stringify(d), /PRIVATE KEY/, "no key in the Domain");
    t.equal(peer.spec.prefixLen, 16);
  },
);

t.test("allocations and the certificate survive a restart of the hub on the same store", async (t) => {
  const dataDir = tempDataDir(t);
  const first = await startDomainHarness(t, dataDir);
  await first.store.create(domain("ppo", "10.0.1.0/24"));
  await first.store.create(job("train", "ppo"));
  for (const n of ["c", "a", "b"]) await first.store.create(pod("beijing", `w-${n}`, "train", "worker"));
  const before = await waitFor("three allocations", async () => {
    const a = await allocations(first.store, "ppo");
    return count(a) === 3 ? a : undefined;
  });
  const certBefore = (await first.store.get<Domain>("Domain", "", "ppo"))?.status?.certificate;
  await first.stop();

  const second = await startDomainHarness(t, dataDir);
  await second.store.create(pod("beijing", "w-0", "train", "worker"));
  const after = await waitFor("four allocations", async () => {
    const a = await allocations(second.store, "ppo");
    return count(a) === 4 ? a : undefined;
  });
  for (const [k, ip] of Object.entries(before)) t.equal(after[k], ip, `${k} keeps ${ip}`);
  t.equal(after["beijing/w-0"], "10.0.1.4", "the newcomer gets a free address, not a taken one");
  t.equal((await second.store.get<Domain>("Domain", "", "ppo"))?.status?.certificate, certBefore);
});

t.test("a Domain from a hub before per-cluster certificates is re-keyed on the next reconcile", async (t) => {
  const dataDir = tempDataDir(t);
  const first = await startDomainHarness(t, dataDir);
  await first.store.create(domain("ppo", "10.0.1.0/24"));
  await first.store.create(job("train", "ppo"));
  await first.store.create(pod("beijing", "a-0", "train", "a"));
  await first.store.create(pod("shanghai", "b-0", "train", "b"));
  await waitFor("two peers", async () => (await peers(first.store, "ppo")).size === 2);
  await first.stop();
  // What the earlier hub left: one key and certificate for the Domain, in both DomainPeers.
  const pki = openCertificateAuthority({ dataDir });
  const sharedKey = generateKeyPair();
  const sharedCert = pki.issue({
    role: "domain",
    name: "ppo",
    publicKey: sharedKey.publicKeyPem,
    ttlMs: 86_400_000,
    serverNames: ["ppo.domain"],
  }).certPem;
  const shared = join(dataDir, "pki", "domains", "ppo");
  writeFileSync(`${shared}.key`, sharedKey.privateKeyPem, { mode: 0o600 });
  writeFileSync(`${shared}.crt`, sharedCert);
  rmSync(shared, { recursive: true });
  const store = openSqliteStore({ dataDir });
  for (const ns of ["agent-beijing", "agent-shanghai"])
    await modify<DomainPeer>(store, "DomainPeer", ns, "ppo", (p) => {
      p.spec = { ...p.spec, cert: sharedCert, key: sharedKey.privateKeyPem };
    });
  await store.close();

  const second = await startDomainHarness(t, dataDir);
  const rekeyed = await waitFor("both peers re-keyed", async () => {
    const p = await peers(second.store, "ppo");
    return [...p.values()].every((peer) => peer.spec.key !== sharedKey.privateKeyPem) ? p : undefined;
  });
  for (const [ns, peer] of rekeyed) {
    const cluster = ns.slice("agent-".length);
    t.equal(
      pki.verify(peer.spec.cert, { role: "domain", cluster }).name,
      "ppo",
      `${cluster}'s own certificate`,
    );
    t.equal(readFileSync(join(shared, `${cluster}.key`), "utf8"), peer.spec.key, `${cluster}'s key on disk`);
  }
  t.notOk(existsSync(`${shared}.key`), "the shared key is gone from the hub");
  t.notOk(existsSync(`${shared}.crt`));
});

t.test(
  "a pod re-created under the same name gets its address back; a deleted pod's address is reused",
  async (t) => {
    const { store } = await startDomainHarness(t, tempDataDir(t));
    await store.create(domain("small", "10.0.0.0/29"));
    await store.create(job("j", "small"));
    await store.create(pod("beijing", "a", "j", "t"));
    await store.create(pod("beijing", "b", "j", "t"));
    await waitFor("two", async () => count(await allocations(store, "small")) === 2);
    await store.delete("Pod", "agent-beijing", "a");
    await waitFor("a released", async () => count(await allocations(store, "small")) === 1);
    const released = (await store.get<Domain>("Domain", "", "small"))?.status?.releasedAllocations;
    t.match(released, [{ ip: "10.0.0.1", pod: "a" }], "the release is remembered");
    await store.create(pod("beijing", "c", "j", "t"));
    await waitFor("c", async () => count(await allocations(store, "small")) === 2);
    t.equal((await allocations(store, "small"))["beijing/c"], "10.0.0.3", "c does not take a's address");
    // a comes back (in another cluster, as a rescheduled pod might).
    await store.create(pod("shanghai", "a", "j", "t"));
    const back = await waitFor("a again", async () => {
      const x = await allocations(store, "small");
      return x["shanghai/a"] ? x : undefined;
    });
    t.equal(back["shanghai/a"], "10.0.0.1");
    // Fill the /29 (6 usable): once nothing else is free, a released address is reused.
    for (const n of ["d", "e", "f"]) await store.create(pod("beijing", n, "j", "t"));
    await waitFor("six", async () => count(await allocations(store, "small")) === 6);
    await store.delete("Pod", "agent-beijing", "b");
    await waitFor("b released", async () => count(await allocations(store, "small")) === 5);
    await store.create(pod("beijing", "g", "j", "t"));
    const full = await waitFor("g", async () => {
      const x = await allocations(store, "small");
      return x["beijing/g"] ? x : undefined;
    });
    t.equal(full["beijing/g"], "10.0.0.2", "g reuses b's address");
  },
);

t.test("a full range sets AddressPoolExhausted and recovers when a pod goes", async (t) => {
  const { store } = await startDomainHarness(t, tempDataDir(t));
  await store.create(domain("tiny", "10.0.0.0/30"));
  await store.create(job("j", "tiny"));
  for (const n of ["a", "b", "c"]) await store.create(pod("beijing", n, "j", "t"));
  const d = await waitFor("exhausted", async () => {
    const x = await store.get<Domain>("Domain", "", "tiny");
    return x?.status?.conditions?.find((c) => c.type === "AddressPoolExhausted")?.status === "True"
      ? x
      : undefined;
  });
  t.same(
    d.status?.ipAllocations?.map((a) => [a.pod, a.ip]),
    [
      ["a", "10.0.0.1"],
      ["b", "10.0.0.2"],
    ],
    "network 10.0.0.0 and broadcast 10.0.0.3 are never handed out",
  );
  const exhausted = d.status?.conditions?.find((c) => c.type === "AddressPoolExhausted");
  t.match(exhausted, { reason: "NoFreeAddress", message: /j\/t\/c.*10\.0\.0\.0\/30 has 2 usable addresses/ });
  t.match(
    d.status?.conditions?.find((c) => c.type === "Ready"),
    { status: "False" },
  );
  // The DomainPeer is written after the status: wait for it, then check who is routed.
  const peer = await waitFor("peer", async () => {
    const p = (await peers(store, "tiny")).get("agent-beijing");
    return (p?.spec.pods?.length ?? 0) >= 2 ? p : undefined;
  });
  t.same(
    peer.spec.pods?.map((p) => p.name),
    ["a", "b"],
    "a pod without an address is not routed",
  );
  await store.delete("Pod", "agent-beijing", "a");
  const ok = await waitFor("recovered", async () => {
    const x = await store.get<Domain>("Domain", "", "tiny");
    return x?.status?.conditions?.find((c) => c.type === "AddressPoolExhausted")?.status === "False"
      ? x
      : undefined;
  });
  t.match(ok.status?.ipAllocations, [
    { ip: "10.0.0.1", pod: "c" },
    { ip: "10.0.0.2", pod: "b" },
  ]);
});

t.test("a Job moved to another Domain, and a deleted Domain, take their pods and peers along", async (t) => {
  const dataDir = tempDataDir(t);
  const { store } = await startDomainHarness(t, dataDir);
  await store.create(domain("one", "10.1.0.0/24"));
  await store.create(domain("two", "10.2.0.0/24"));
  await store.create(job("j", "one"));
  await store.create(pod("beijing", "p", "j", "t"));
  await waitFor("in one", async () => (await peers(store, "one")).size === 1);
  await modify(store, "Job", "", "j", (j) => {
    (j.spec as { domain?: string }).domain = "two";
  });
  await waitFor("in two", async () => (await allocations(store, "two"))["beijing/p"] === "10.2.0.1");
  await waitFor("out of one", async () => (await peers(store, "one")).size === 0);
  t.same(await allocations(store, "one"), {});
  t.notOk(
    existsSync(join(dataDir, "pki", "domains", "one", "beijing.key")),
    "beijing left one: its key goes",
  );
  t.ok(existsSync(join(dataDir, "pki", "domains", "two", "beijing.key")), "and it has one for two");

  await store.delete("Domain", "", "two");
  await waitFor("peers of two deleted", async () => (await peers(store, "two")).size === 0);
  await waitFor("keys removed", () => !existsSync(join(dataDir, "pki", "domains", "two")));
});

t.test("a restarted hub that reconciles before its Job watch caught up keeps every address", async (t) => {
  const dataDir = tempDataDir(t);
  const first = await startDomainHarness(t, dataDir);
  await first.store.create(domain("ppo", "10.0.1.0/24"));
  await first.store.create(job("train", "ppo"));
  for (const n of ["a", "b"]) await first.store.create(pod("beijing", n, "train", "t"));
  await waitFor("allocated", async () => count(await allocations(first.store, "ppo")) === 2);
  await waitFor("peer", async () => (await peers(first.store, "ppo")).size === 1);
  const before = await first.store.get<Domain>("Domain", "", "ppo");
  await first.stop();

  // A fresh controller whose watches have delivered nothing yet: its reconcile runs first.
  const store = openSqliteStore({ dataDir });
  t.teardown(() => store.close());
  const controller = createDomainController({ pki: openCertificateAuthority({ dataDir }), dataDir });
  await controller.reconcile(
    { key: "ppo", namespace: "", name: "ppo" },
    { store, clock: systemClock, logger: silentLogger, controller: "domain", enqueue: () => {} },
  );
  const after = await store.get<Domain>("Domain", "", "ppo");
  t.same(after?.status?.ipAllocations, before?.status?.ipAllocations);
  t.equal(after?.metadata.resourceVersion, before?.metadata.resourceVersion, "nothing was rewritten");
  t.same([...(await peers(store, "ppo")).keys()], ["agent-beijing"], "the DomainPeer stays");
});
