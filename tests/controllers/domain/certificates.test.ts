import { X509Certificate } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { DomainCertificates } from "../../../operators/controllers/domain/index.ts";
import { FakeClock } from "../../../operators/lib/clock.ts";
import {
  generateKeyPair,
  normalizeSerial,
  openCertificateAuthority,
  publicKeyPem,
} from "../../../operators/lib/pki/index.ts";
import { tempDataDir } from "./fixtures.ts";

const DAY = 86_400_000;

function setup(t: Tap) {
  const dataDir = tempDataDir(t);
  const clock = new FakeClock(Date.UTC(2026, 10, 1));
  const pki = openCertificateAuthority({ dataDir, clock });
  const open = () => new DomainCertificates({ pki, dataDir, ttlMs: 90 * DAY, clock });
  return { dataDir, clock, pki, open };
}
type Tap = Parameters<typeof tempDataDir>[0];

t.test(
  "a cluster's key for a Domain is created once (0600) and its certificate is loaded, not re-issued",
  async (t) => {
    const { pki, open } = setup(t);
    const first = open().ensure("ppo", "beijing");
    const certs = open();
    t.equal(statSync(certs.keyPath("ppo", "beijing")).mode & 0o777, 0o600);
    const second = certs.ensure("ppo", "beijing");
    t.equal(second.keyPem, first.keyPem);
    t.equal(second.certPem, first.certPem, "a second hub start reuses the certificate");
    const id = pki.verify(first.certPem, { role: "domain", cluster: "beijing" });
    t.equal(id.name, "ppo");
    t.equal(id.publicKeyPem, publicKeyPem(first.keyPem));
  },
);

t.test("a missing or foreign certificate is re-issued for the same key", async (t) => {
  const { open } = setup(t);
  const certs = open();
  const first = certs.ensure("a", "beijing");
  const other = certs.ensure("b", "beijing");
  rmSync(certs.certPath("a", "beijing"));
  const reissued = open().ensure("a", "beijing");
  t.equal(reissued.keyPem, first.keyPem);
  t.not(reissued.certPem, first.certPem);
  writeFileSync(certs.certPath("a", "beijing"), other.certPem);
  const fixed = open().ensure("a", "beijing");
  t.equal(
    new X509Certificate(fixed.certPem).subject.includes("CN=a"),
    true,
    "the certificate names its Domain",
  );
  t.equal(readFileSync(certs.certPath("a", "beijing"), "utf8"), fixed.certPem);
});

t.test("a certificate is renewed at two thirds of its life, and a revoked one at load", async (t) => {
  const { open, clock, pki } = setup(t);
  const certs = open();
  const first = certs.ensure("d", "beijing");
  clock.advance(50 * DAY);
  t.equal(certs.ensure("d", "beijing").certPem, first.certPem, "not yet due");
  clock.advance(15 * DAY);
  const renewed = certs.ensure("d", "beijing");
  t.not(renewed.certPem, first.certPem, "renewed after 60 of 90 days");
  t.equal(renewed.keyPem, first.keyPem, "with the same key");
  pki.revoke(normalizeSerial(new X509Certificate(renewed.certPem).serialNumber), "test");
  const replaced = open().ensure("d", "beijing");
  t.not(replaced.certPem, renewed.certPem);
  t.ok(pki.verify(replaced.certPem, { role: "domain", cluster: "beijing" }));
});

t.test("each member cluster has a key and a certificate of its own, naming it", async (t) => {
  const { pki, open } = setup(t);
  const certs = open();
  const beijing = certs.ensure("ppo", "beijing");
  const shanghai = certs.ensure("ppo", "shanghai");
  t.not(beijing.keyPem, shanghai.keyPem, "no key shared between clusters");
  t.equal(pki.verify(shanghai.certPem, { role: "domain", cluster: "shanghai" }).name, "ppo");
  t.throws(
    () => pki.verify(beijing.certPem, { role: "domain", cluster: "shanghai" }),
    /bound to cluster beijing, expected shanghai/,
  );
  // A certificate of another cluster found in a cluster's file is replaced.
  writeFileSync(certs.certPath("ppo", "beijing"), shanghai.certPem);
  const fixed = open().ensure("ppo", "beijing");
  t.equal(
    pki.verify(fixed.certPem, { role: "domain", cluster: "beijing" }).publicKeyPem,
    publicKeyPem(beijing.keyPem),
  );
});

t.test(
  "the key every cluster shared before is removed; per-cluster credentials take its place",
  async (t) => {
    const { dataDir, pki, open } = setup(t);
    // What an earlier hub kept: one key and certificate per Domain, naming no cluster.
    const shared = join(dataDir, "pki", "domains", "ppo");
    mkdirSync(join(dataDir, "pki", "domains"), { recursive: true });
    const old = generateKeyPair();
    writeFileSync(`${shared}.key`, old.privateKeyPem, { mode: 0o600 });
    writeFileSync(
      `${shared}.crt`,
      pki.issue({ role: "domain", name: "ppo", publicKey: old.publicKeyPem, ttlMs: 90 * DAY }).certPem,
    );
    const fresh = open().ensure("ppo", "beijing");
    t.notOk(existsSync(`${shared}.key`), "the shared key is gone");
    t.notOk(existsSync(`${shared}.crt`));
    t.not(fresh.keyPem, old.privateKeyPem);
  },
);

t.test("a cluster that left the Domain loses its credentials; a removed Domain all of them", async (t) => {
  const { open } = setup(t);
  const certs = open();
  const stays = certs.ensure("gone", "beijing");
  certs.ensure("gone", "shanghai");
  certs.retain("gone", new Set(["beijing"]));
  t.notOk(existsSync(certs.keyPath("gone", "shanghai")), "shanghai's key removed");
  t.notOk(existsSync(certs.certPath("gone", "shanghai")));
  t.equal(certs.ensure("gone", "beijing").keyPem, stays.keyPem, "beijing keeps its own");
  certs.remove("gone");
  t.notOk(existsSync(certs.keyPath("gone", "beijing")));
  t.notOk(existsSync(certs.certPath("gone", "beijing")));
});

t.test("a certificate not good for serverAuth (issued before end-to-end TLS) is re-issued", async (t) => {
  const { pki, open } = setup(t);
  const certs = open();
  const first = certs.ensure("e2e", "beijing");
  const SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
  t.ok(new X509Certificate(first.certPem).keyUsage?.includes(SERVER_AUTH), "issued for serverAuth");
  // What the hub issued before: clientAuth only.
  const old = pki.issue({
    role: "domain",
    name: "e2e",
    cluster: "beijing",
    publicKey: publicKeyPem(first.keyPem),
    ttlMs: 90 * DAY,
  });
  t.notOk(new X509Certificate(old.certPem).keyUsage?.includes(SERVER_AUTH));
  writeFileSync(certs.certPath("e2e", "beijing"), old.certPem);
  const reissued = open().ensure("e2e", "beijing");
  t.not(reissued.certPem, old.certPem, "a hub start re-issues it");
  t.equal(reissued.keyPem, first.keyPem, "for the same key");
  t.ok(new X509Certificate(reissued.certPem).keyUsage?.includes(SERVER_AUTH));
});
