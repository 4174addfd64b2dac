import { statSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { createEnrollment } from "../../operators/hub/enrollment.ts";
import { fileTokenStore, memoryTokenStore } from "../../operators/hub/enrollment-tokens.ts";
import { FakeClock } from "../../operators/lib/clock.ts";
import {
  certificateFingerprint,
  generateKeyPair,
  openCertificateAuthority,
} from "../../operators/lib/pki/index.ts";
import { enrollAgent, fileCredentialStore } from "../../operators/lib/tunnel/index.ts";
import { HOUR, startTunnelHub, tempDir } from "../lib/tunnel/fixture.ts";

const declared = new Set(["beijing", "shanghai"]);
const clusterExists = (name: string) => declared.has(name);

t.test("a token enrolls one key, expires, and only exists for a Cluster declared in git", async (t) => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const ca = openCertificateAuthority({ dataDir: await tempDir() });
  const enrollment = createEnrollment({ ca, tokens: memoryTokenStore(), clusterExists, clock });
  const created = await enrollment.createToken({ cluster: "beijing", ttlMs: HOUR });
  t.match(created.token, /^rlt\.[0-9a-f]{12}\.[A-Za-z0-9_-]{43}$/);
  t.equal(created.caFingerprint, ca.fingerprint);
  t.equal(await enrollment.redeem(created.token), "beijing");
  const key = generateKeyPair();
  const cert = await enrollment.issue("beijing", key.publicKeyPem, created.token);
  t.equal(ca.verify(cert, { role: "agent", cluster: "beijing" }).cluster, "beijing");
  // A retry (the first answer lost with a hub killed) with the same key: the same certificate.
  t.equal(await enrollment.redeem(created.token), "beijing");
  t.equal(await enrollment.issue("beijing", key.publicKeyPem, created.token), cert, "the same answer");
  await t.rejects(
    Promise.resolve().then(() => enrollment.issue("beijing", generateKeyPair().publicKeyPem, created.token)),
    /already used to enroll another key/,
    "another key is refused",
  );
  clock.advance(HOUR);
  await t.rejects(
    Promise.resolve().then(() => enrollment.issue("beijing", key.publicKeyPem, created.token)),
    /expired/,
    "not past the token's lifetime",
  );

  const expiring = await enrollment.createToken({ cluster: "beijing", ttlMs: HOUR });
  clock.advance(HOUR);
  await t.rejects(
    Promise.resolve().then(() => enrollment.redeem(expiring.token)),
    /expired/,
  );

  await t.rejects(enrollment.createToken({ cluster: "atlantis", ttlMs: HOUR }), /no Cluster named atlantis/);
  const guessed = await enrollment.createToken({ cluster: "shanghai", ttlMs: HOUR });
  const wrongSecret = `${guessed.token.slice(0, 17)}${"A".repeat(43)}`;
  await t.rejects(
    Promise.resolve().then(() => enrollment.redeem(wrongSecret)),
    /does not match/,
  );
  await t.rejects(
    Promise.resolve().then(() => enrollment.redeem(guessed.token)),
    /already used/,
    "a wrong guess burns it",
  );
});

t.test("binding a token to its key is atomic across processes sharing the token file", async (t) => {
  const dir = await tempDir();
  const path = join(dir, "tokens.json");
  const ca = openCertificateAuthority({ dataDir: dir });
  const one = createEnrollment({ ca, tokens: fileTokenStore(path), clusterExists });
  const two = createEnrollment({ ca, tokens: fileTokenStore(path), clusterExists });
  const { token } = await one.createToken({ cluster: "beijing", ttlMs: HOUR });
  const key = generateKeyPair();
  const cert = await one.issue("beijing", key.publicKeyPem, token);
  t.equal(await two.issue("beijing", key.publicKeyPem, token), cert, "the other process answers the same");
  await t.rejects(
    Promise.resolve().then(() => two.issue("beijing", generateKeyPair().publicKeyPem, token)),
    /another key/,
  );
});

t.test("the token file holds only hashes, is 0600, and is shared between processes", async (t) => {
  const dir = await tempDir();
  const path = join(dir, "tokens.json");
  const ca = openCertificateAuthority({ dataDir: dir });
  const cli = createEnrollment({ ca, tokens: fileTokenStore(path), clusterExists });
  const hub = createEnrollment({ ca, tokens: fileTokenStore(path), clusterExists });
  const created = await cli.createToken({ cluster: "beijing", ttlMs: HOUR });
  t.equal(statSync(path).mode & 0o777, 0o600);
  const { readFileSync } = await import("node:fs");
  const secret = created.token.split(".")[2]!;
  t.notOk(readFileSync(path, "utf8").includes(secret), "the secret is not on disk");
  t.equal(await hub.redeem(created.token), "beijing");
  await hub.issue("beijing", generateKeyPair().publicKeyPem, created.token);
  await t.rejects(
    Promise.resolve().then(() => cli.issue("beijing", generateKeyPair().publicKeyPem, created.token)),
    /another key/,
  );
});

t.test(
  "an agent with the right CA hash enrolls and gets a certificate bound to the token's cluster",
  async (t) => {
    const hubDir = await tempDir();
    const ca = openCertificateAuthority({ dataDir: hubDir });
    const enrollment = createEnrollment({ ca, tokens: memoryTokenStore(), clusterExists });
    const hub = await startTunnelHub({ enrollment }, hubDir);
    t.teardown(() => hub.server.close());
    const { token, caFingerprint } = await enrollment.createToken({ cluster: "beijing", ttlMs: HOUR });
    const creds = await enrollAgent({ hub: hub.address, token, caHash: caFingerprint });
    t.equal(creds.cluster, "beijing");
    t.equal(ca.verify(creds.certPem, { role: "agent", cluster: "beijing" }).cluster, "beijing");
    t.equal(creds.caCertPem, ca.certPem);
    t.equal(
      certificateFingerprint(creds.hubCertPem ?? ""),
      certificateFingerprint(hub.host.certPem),
      "the hub's host-key certificate is pinned",
    );

    const storePath = join(await tempDir(), "agent", "credentials.json");
    await fileCredentialStore(storePath).save(creds);
    t.equal(statSync(storePath).mode & 0o777, 0o600);
    t.same(await fileCredentialStore(storePath).load(), creds, "reused after a restart");

    await t.rejects(
      enrollAgent({ hub: hub.address, token, caHash: caFingerprint }),
      /already used to enroll another key/,
      "the token cannot enroll a second key",
    );
  },
);

t.test("with a wrong CA hash the agent hangs up before the hub ever sees the token", async (t) => {
  const hubDir = await tempDir();
  const ca = openCertificateAuthority({ dataDir: hubDir });
  const real = createEnrollment({ ca, tokens: memoryTokenStore(), clusterExists });
  const seen: string[] = [];
  const spy = {
    redeem: (tok: string) => {
      seen.push(tok);
      return real.redeem(tok);
    },
    issue: real.issue,
  };
  const hub = await startTunnelHub({ enrollment: spy }, hubDir);
  t.teardown(() => hub.server.close());
  const { token } = await real.createToken({ cluster: "beijing", ttlMs: HOUR });
  const impostorCa = openCertificateAuthority({ dataDir: await tempDir() });
  await t.rejects(
    enrollAgent({ hub: hub.address, token, caHash: impostorCa.fingerprint }),
    /refusing to send the token/,
  );
  t.same(seen, [], "the hub never received the token");
  // The token is still good for the genuine enrollment.
  const creds = await enrollAgent({ hub: hub.address, token, caHash: ca.fingerprint });
  t.equal(creds.cluster, "beijing");
  t.same(seen, [token]);
});

t.test("a hub whose host key is not the certified one is refused even with the right CA", async (t) => {
  const hubDir = await tempDir();
  const ca = openCertificateAuthority({ dataDir: hubDir });
  const enrollment = createEnrollment({ ca, tokens: memoryTokenStore(), clusterExists });
  const seen: string[] = [];
  const genuine = await startTunnelHub({}, hubDir);
  await genuine.server.close();
  // An impostor that copied ca.crt and host.crt but not the host key.
  const { generateKeyPair } = await import("../../operators/lib/pki/index.ts");
  const impostor = await startTunnelHub(
    {
      hostKey: generateKeyPair().privateKeyPem,
      hostCert: genuine.host.certPem,
      enrollment: {
        redeem: (tok) => {
          seen.push(tok);
          return "beijing";
        },
        issue: enrollment.issue,
      },
    },
    hubDir,
  );
  t.teardown(() => impostor.server.close());
  const { token } = await enrollment.createToken({ cluster: "beijing", ttlMs: HOUR });
  await t.rejects(
    enrollAgent({ hub: impostor.address, token, caHash: ca.fingerprint }),
    /does not certify the key/,
  );
  t.same(seen, []);
});
