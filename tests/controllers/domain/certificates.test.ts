import { X509Certificate } from "node:crypto";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import t from "tap";
import { DomainCertificates } from "../../../operators/controllers/domain/index.ts";
import { normalizeSerial, openCertificateAuthority, publicKeyPem } from "../../../operators/lib/pki/index.ts";
import { tempDataDir } from "./fixtures.ts";

const DAY = 86_400_000;

function setup(t: Tap) {
  const dataDir = tempDataDir(t);
  let now = Date.UTC(2026, 10, 1);
  const clock = { now: () => now, advance: (ms: number) => (now += ms) };
  const pki = openCertificateAuthority({ dataDir, now: clock.now });
  const open = () => new DomainCertificates({ pki, dataDir, ttlMs: 90 * DAY, now: clock.now });
  return { dataDir, clock, pki, open };
}
type Tap = Parameters<typeof tempDataDir>[0];

t.test("a Domain's key is created once (0600) and its certificate is loaded, not re-issued", async (t) => {
  const { pki, open } = setup(t);
  const first = open().ensure("ppo");
  const certs = open();
  t.equal(statSync(certs.keyPath("ppo")).mode & 0o777, 0o600);
  const second = certs.ensure("ppo");
  t.equal(second.keyPem, first.keyPem);
  t.equal(second.certPem, first.certPem, "a second hub start reuses the certificate");
  const id = pki.verify(first.certPem, { role: "domain" });
  t.equal(id.name, "ppo");
  t.equal(id.publicKeyPem, publicKeyPem(first.keyPem));
});

t.test("a missing or foreign certificate is re-issued for the same key", async (t) => {
  const { open } = setup(t);
  const certs = open();
  const first = certs.ensure("a");
  const other = certs.ensure("b");
  rmSync(certs.certPath("a"));
  const reissued = open().ensure("a");
  t.equal(reissued.keyPem, first.keyPem);
  t.not(reissued.certPem, first.certPem);
  writeFileSync(certs.certPath("a"), other.certPem);
  const fixed = open().ensure("a");
  t.equal(
    new X509Certificate(fixed.certPem).subject.includes("CN=a"),
    true,
    "the certificate names its Domain",
  );
  t.equal(readFileSync(certs.certPath("a"), "utf8"), fixed.certPem);
});

t.test("a certificate is renewed at two thirds of its life, and a revoked one at load", async (t) => {
  const { open, clock, pki } = setup(t);
  const certs = open();
  const first = certs.ensure("d");
  clock.advance(50 * DAY);
  t.equal(certs.ensure("d").certPem, first.certPem, "not yet due");
  clock.advance(15 * DAY);
  const renewed = certs.ensure("d");
  t.not(renewed.certPem, first.certPem, "renewed after 60 of 90 days");
  t.equal(renewed.keyPem, first.keyPem, "with the same key");
  pki.revoke(normalizeSerial(new X509Certificate(renewed.certPem).serialNumber), "test");
  const replaced = open().ensure("d");
  t.not(replaced.certPem, renewed.certPem);
  t.ok(pki.verify(replaced.certPem, { role: "domain" }));
});

t.test("removing a Domain's credentials deletes its files", async (t) => {
  const { open } = setup(t);
  const certs = open();
  certs.ensure("gone");
  certs.remove("gone");
  t.notOk(existsSync(certs.keyPath("gone")));
  t.notOk(existsSync(certs.certPath("gone")));
});

t.test("a certificate not good for serverAuth (issued before end-to-end TLS) is re-issued", async (t) => {
  const { pki, open } = setup(t);
  const certs = open();
  const first = certs.ensure("e2e");
  const SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
  t.ok(new X509Certificate(first.certPem).keyUsage?.includes(SERVER_AUTH), "issued for serverAuth");
  // What the hub issued before: clientAuth only.
  const old = pki.issue({
    role: "domain",
    name: "e2e",
    publicKey: publicKeyPem(first.keyPem),
    ttlMs: 90 * DAY,
  });
  t.notOk(new X509Certificate(old.certPem).keyUsage?.includes(SERVER_AUTH));
  writeFileSync(certs.certPath("e2e"), old.certPem);
  const reissued = open().ensure("e2e");
  t.not(reissued.certPem, old.certPem, "a hub start re-issues it");
  t.equal(reissued.keyPem, first.keyPem, "for the same key");
  t.ok(new X509Certificate(reissued.certPem).keyUsage?.includes(SERVER_AUTH));
});
