import { X509Certificate } from "node:crypto";
import { existsSync, statSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { FakeClock } from "../../../operators/lib/clock.ts";
import {
  certificateFingerprint,
  generateKeyPair,
  openCertificateAuthority,
  openHostIdentity,
  PkiError,
  renewalTime,
  sshPublicKeyBlob,
} from "../../../operators/lib/pki/index.ts";

const HOUR = 3600_000;

async function dataDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), "rlark-pki-"));
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof PkiError) return err.code;
    throw err;
  }
  return undefined;
}

t.test("the CA is created once with a 0600 key and loaded unchanged afterwards", async (t) => {
  const dir = await dataDir();
  const first = openCertificateAuthority({ dataDir: dir });
  t.equal(statSync(join(dir, "pki", "ca.key")).mode & 0o777, 0o600);
  t.match(first.fingerprint, /^sha256:[0-9a-f]{64}$/);
  t.equal(first.fingerprint, certificateFingerprint(first.certPem));
  const second = openCertificateAuthority({ dataDir: dir });
  t.equal(second.certPem, first.certPem, "the second start loads the same CA");
  const issued = first.issue({
    role: "agent",
    name: "beijing",
    publicKey: generateKeyPair().publicKeyPem,
    ttlMs: HOUR,
  });
  t.equal(second.verify(issued.certPem, { role: "agent" }).cluster, "beijing");
});

t.test("an issued agent certificate verifies to its role, cluster, serial and key", async (t) => {
  const ca = openCertificateAuthority({ dataDir: await dataDir() });
  const keys = generateKeyPair();
  const issued = ca.issue({ role: "agent", name: "beijing", publicKey: keys.publicKeyPem, ttlMs: HOUR });
  const id = ca.verify(issued.certPem, { role: "agent", cluster: "beijing" });
  t.equal(id.role, "agent");
  t.equal(id.name, "beijing");
  t.equal(id.cluster, "beijing");
  t.equal(id.serial, issued.serial);
  t.ok(
    sshPublicKeyBlob(id.publicKeyPem).equals(sshPublicKeyBlob(keys.privateKeyPem)),
    "binds the requested key",
  );
  t.ok(id.notAfter - id.notBefore <= HOUR + 6 * 60_000);
  for (const role of ["domain", "ssh-guest", "admin"] as const) {
    const c = ca.issue({
      role,
      name: "alice",
      cluster: "shanghai",
      publicKey: keys.publicKeyPem,
      ttlMs: HOUR,
    });
    t.equal(ca.verify(c.certPem, { role }).role, role);
  }
});

t.test("wrong role, wrong cluster, expired, revoked and foreign-CA certificates are refused", async (t) => {
  const clock = new FakeClock(Date.now());
  const ca = openCertificateAuthority({ dataDir: await dataDir(), clock });
  const other = openCertificateAuthority({ dataDir: await dataDir() });
  const key = generateKeyPair().publicKeyPem;
  const good = ca.issue({ role: "agent", name: "beijing", publicKey: key, ttlMs: HOUR });
  t.equal(
    codeOf(() => ca.verify(good.certPem, { role: "admin" })),
    "wrong-role",
  );
  t.equal(
    codeOf(() => ca.verify(good.certPem, { role: "agent", cluster: "shanghai" })),
    "wrong-cluster",
  );
  const forged = other.issue({ role: "agent", name: "beijing", publicKey: key, ttlMs: HOUR });
  t.equal(
    codeOf(() => ca.verify(forged.certPem, { role: "agent" })),
    "untrusted",
  );
  t.equal(
    codeOf(() => ca.verify("not a certificate", { role: "agent" })),
    "malformed",
  );
  ca.revoke(good.serial, "key compromised");
  t.equal(
    codeOf(() => ca.verify(good.certPem, { role: "agent" })),
    "revoked",
  );
  const later = ca.issue({ role: "agent", name: "beijing", publicKey: key, ttlMs: HOUR });
  t.equal(
    codeOf(() => ca.verify(later.certPem, { role: "agent" })),
    undefined,
  );
  clock.advance(2 * HOUR);
  t.equal(
    codeOf(() => ca.verify(later.certPem, { role: "agent" })),
    "expired",
  );
});

t.test("a revocation survives a restart and one written by another process is seen", async (t) => {
  const dir = await dataDir();
  const hub = openCertificateAuthority({ dataDir: dir });
  const issued = hub.issue({
    role: "agent",
    name: "a",
    publicKey: generateKeyPair().publicKeyPem,
    ttlMs: HOUR,
  });
  t.equal(hub.isRevoked(issued.serial), false);
  // The CLI opens the same data dir in its own process.
  openCertificateAuthority({ dataDir: dir }).revoke(issued.serial, "decommissioned");
  t.equal(hub.isRevoked(issued.serial), true, "the running hub sees the CLI's revocation");
  t.equal(openCertificateAuthority({ dataDir: dir }).isRevoked(issued.serial), true);
});

t.test("names that could forge subject fields are refused at issue time", async (t) => {
  const ca = openCertificateAuthority({ dataDir: await dataDir() });
  const key = generateKeyPair().publicKeyPem;
  t.equal(
    codeOf(() => ca.issue({ role: "agent", name: "a\nOU=b", publicKey: key, ttlMs: HOUR })),
    "invalid-request",
  );
  t.equal(
    codeOf(() => ca.issue({ role: "agent", name: "a", publicKey: "junk", ttlMs: HOUR })),
    "invalid-request",
  );
});

t.test("renewal falls between 57 % and 77 % of the lifetime and is spread by jitter", async (t) => {
  t.equal(
    renewalTime(0, 3000, () => 0.5),
    2000,
  );
  t.equal(
    renewalTime(0, 3000, () => 0),
    1700,
  );
  t.equal(
    renewalTime(0, 3000, () => 1),
    2300,
  );
  const spread = new Set(Array.from({ length: 50 }, () => renewalTime(0, 1_000_000)));
  t.ok(spread.size > 40, "agents enrolled together renew at different times");
});

t.test("the hub host identity is created once and certified by the CA for role hub", async (t) => {
  const dir = await dataDir();
  const ca = openCertificateAuthority({ dataDir: dir });
  const first = openHostIdentity({ dataDir: dir, ca });
  t.equal(statSync(join(dir, "pki", "host.key")).mode & 0o777, 0o600);
  const id = ca.verify(first.certPem, { role: "hub" });
  t.ok(sshPublicKeyBlob(id.publicKeyPem).equals(sshPublicKeyBlob(first.privateKeyPem)));
  const second = openHostIdentity({ dataDir: dir, ca });
  t.equal(second.privateKeyPem, first.privateKeyPem);
  t.equal(second.certPem, first.certPem, "a fresh certificate is not re-issued");
});

t.test(
  "a CA in caDir (a mounted Secret) is used as it is; the data dir keeps only the revocations",
  async (t) => {
    const made = await dataDir();
    const original = openCertificateAuthority({ dataDir: made });
    const dir = await dataDir();
    const ca = openCertificateAuthority({ dataDir: dir, caDir: join(made, "pki") });
    t.equal(ca.fingerprint, original.fingerprint, "the given CA, not a new one");
    t.notOk(existsSync(join(dir, "pki", "ca.key")), "no CA is made in the data dir");
    const issued = ca.issue({
      role: "agent",
      name: "beijing",
      publicKey: generateKeyPair().publicKeyPem,
      ttlMs: HOUR,
    });
    ca.revoke(issued.serial, "test");
    t.ok(existsSync(join(dir, "pki", "revoked.json")), "revocations are written to the data dir");
    t.notOk(existsSync(join(made, "pki", "revoked.json")), "never to the CA's folder");
  },
);

t.test("a caDir without ca.crt and ca.key is an error naming the file, and nothing is made", async (t) => {
  const empty = await dataDir();
  const dir = await dataDir();
  t.throws(() => openCertificateAuthority({ dataDir: dir, caDir: empty }), {
    message: new RegExp(`${join(empty, "ca.crt")}.*ca.crt and ca.key`),
  });
  t.notOk(existsSync(join(empty, "ca.key")), "no key is made in the CA's folder");
});

t.test(
  "a serving certificate names its DNS names and IPs and is good for serverAuth; other names are refused",
  async (t) => {
    const ca = openCertificateAuthority({ dataDir: await dataDir() });
    const { publicKeyPem } = generateKeyPair();
    const issued = ca.issue({
      role: "webhook",
      name: "rlark-device-webhook.rlark-system.svc",
      publicKey: publicKeyPem,
      ttlMs: HOUR,
      serverNames: ["rlark-device-webhook.rlark-system.svc", "127.0.0.1"],
    });
    const x509 = new X509Certificate(issued.certPem);
    t.equal(x509.subjectAltName, "DNS:rlark-device-webhook.rlark-system.svc, IP Address:127.0.0.1");
    t.ok(x509.checkHost("rlark-device-webhook.rlark-system.svc"));
    t.ok(x509.checkIP("127.0.0.1"));
    t.ok(x509.toLegacyObject().ext_key_usage?.includes("1.3.6.1.5.5.7.3.1"), "serverAuth");
    t.equal(ca.verify(issued.certPem, { role: "webhook" }).role, "webhook");
    const agent = new X509Certificate(
      ca.issue({ role: "agent", name: "a", publicKey: publicKeyPem, ttlMs: HOUR }).certPem,
    );
    t.equal(agent.subjectAltName, undefined, "no SANs unless asked for");
    for (const bad of ["Bad_Name", "a..b", "x,DNS:evil.example", ""])
      t.equal(
        codeOf(() =>
          ca.issue({ role: "webhook", name: "w", publicKey: publicKeyPem, ttlMs: HOUR, serverNames: [bad] }),
        ),
        "invalid-request",
        `server name ${JSON.stringify(bad)} is refused`,
      );
  },
);
