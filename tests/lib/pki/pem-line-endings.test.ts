// node-forge writes PEM with CRLF line ends; the hub's PEMs are LF wherever they are made or
// loaded, so a Domain's certificate is a clean `|` block in its status file on the status branch.
import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { DomainCertificates } from "../../../operators/controllers/domain/index.ts";
import { renderStatusYaml } from "../../../operators/feedback/index.ts";
import {
  generateKeyPair,
  openCertificateAuthority,
  openHostIdentity,
} from "../../../operators/lib/pki/index.ts";

const dataDir = () => mkdtemp(join(tmpdir(), "rlark-pem-"));

t.test("the CA and the certificates it issues are PEM with LF line ends", async (t) => {
  const dir = await dataDir();
  const ca = openCertificateAuthority({ dataDir: dir });
  t.notMatch(ca.certPem, "\r", "the CA certificate");
  t.notMatch(readFileSync(join(dir, "pki", "ca.crt"), "utf8"), "\r", "the CA certificate file");
  const issued = ca.issue({
    role: "agent",
    name: "a",
    publicKey: generateKeyPair().publicKeyPem,
    ttlMs: 3_600_000,
  });
  t.notMatch(issued.certPem, "\r", "an issued certificate");
  t.ok(ca.verify(issued.certPem, { role: "agent" }), "it still verifies");
  t.notMatch(openHostIdentity({ dataDir: dir, ca, hostName: "hub" }).certPem, "\r", "the hub's certificate");
});

t.test("a Domain's certificate is a clean block in its status YAML", async (t) => {
  const dir = await dataDir();
  const pki = openCertificateAuthority({ dataDir: dir });
  const { certPem } = new DomainCertificates({ pki, dataDir: dir, ttlMs: 86_400_000 }).ensure("lab", "c1");
  const yaml = renderStatusYaml({ status: { certificate: certPem } });
  t.match(yaml, /^ {2}certificate: \|\n {4}-----BEGIN CERTIFICATE-----\n/m);
  t.notMatch(yaml, /\\r|\r/);
});

t.test("PEM files written with CRLF by earlier hubs are loaded as LF, and still verify", async (t) => {
  const dir = await dataDir();
  const first = openCertificateAuthority({ dataDir: dir });
  const domainCerts = new DomainCertificates({ pki: first, dataDir: dir, ttlMs: 86_400_000 });
  domainCerts.ensure("lab", "c1");
  for (const file of [join(dir, "pki", "ca.crt"), domainCerts.certPath("lab", "c1")]) {
    writeFileSync(file, readFileSync(file, "utf8").replace(/\r?\n/g, "\r\n"));
  }
  const ca = openCertificateAuthority({ dataDir: dir });
  t.equal(ca.certPem, first.certPem);
  t.equal(ca.fingerprint, first.fingerprint, "the same CA");
  const again = new DomainCertificates({ pki: ca, dataDir: dir, ttlMs: 86_400_000 }).ensure("lab", "c1");
  t.notMatch(again.certPem, "\r");
});
