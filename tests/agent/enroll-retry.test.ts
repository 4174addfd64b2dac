// An enrollment cut short by a hub that dies after it bound the token to the agent's key and
// issued the certificate, but before the answer reached the agent: the agent tries again with the
// same token and the same key, in the same process or after a restart on its state dir, and gets
// the same certificate from the restarted hub; a different key with that token is refused.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { ensureAgentCredentials } from "../../operators/agent/enroll.ts";
import { createEnrollment, type Enrollment } from "../../operators/hub/enrollment.ts";
import { fileTokenStore } from "../../operators/hub/enrollment-tokens.ts";
import { openCertificateAuthority } from "../../operators/lib/pki/index.ts";
import { enrollAgent, fileCredentialStore } from "../../operators/lib/tunnel/index.ts";
import { HOUR, startTunnelHub, type TunnelHub, tempDir } from "../lib/tunnel/fixture.ts";

const clusterExists = (name: string) => name === "beijing";

/**
 * A hub on `dir` (its token file there) whose first certificate is issued and recorded, then the
 * hub dies before answering: every connection dropped, and a new server on the same port and data
 * dir, as a supervisor restarts a killed hub.
 */
async function dyingHub(dir: string) {
  const ca = openCertificateAuthority({ dataDir: dir });
  const enrollment = createEnrollment({
    ca,
    tokens: fileTokenStore(join(dir, "tokens.json")),
    clusterExists,
  });
  let restarted: Promise<void> | undefined;
  const issued: string[] = [];
  const hub: TunnelHub = await startTunnelHub(
    {
      enrollment: {
        redeem: (token) => enrollment.redeem(token),
        issue: async (cluster, key, token) => {
          const cert = await enrollment.issue(cluster, key, token);
          issued.push(cert);
          if (!restarted) {
            restarted = hub.restart();
            // the answer never leaves: that process is gone
            await new Promise(() => undefined);
          }
          return cert;
        },
      },
    },
    dir,
  );
  return { hub, ca, enrollment: enrollment as Enrollment, issued, back: () => restarted };
}

t.test("an agent whose enrollment a hub kill cut short retries with the same key", async (t) => {
  const dir = await tempDir();
  const h = await dyingHub(dir);
  t.teardown(() => h.hub.server.close());
  const { token, caFingerprint } = await h.enrollment.createToken({ cluster: "beijing", ttlMs: HOUR });
  const store = fileCredentialStore(join(await tempDir(), "credentials.json"));
  const retried: string[] = [];
  const enrolling = ensureAgentCredentials({
    store,
    hub: h.hub.address,
    token,
    caHash: caFingerprint,
    backoff: { initialMs: 50, maxMs: 200 },
    onRetry: (error) => retried.push(error.message),
  });
  const credentials = await enrolling;
  t.ok(retried.length >= 1, `the first attempt was cut short (${retried[0]})`);
  t.equal(h.issued.length, 2, "the hub answered twice");
  t.equal(h.issued[1], h.issued[0], "the same certificate both times");
  t.equal(credentials.certPem, h.issued[0], "the agent holds the certificate the lost answer carried");
  t.equal(h.ca.verify(credentials.certPem, { role: "agent", cluster: "beijing" }).cluster, "beijing");
  t.same(await store.load(), credentials, "saved");

  await t.rejects(
    enrollAgent({ hub: h.hub.address, token, caHash: caFingerprint }),
    /already used to enroll another key/,
    "the token enrolls no other key",
  );
});

t.test("an agent restarted after a cut enrollment asks again with the key it kept", async (t) => {
  const dir = await tempDir();
  const h = await dyingHub(dir);
  t.teardown(() => h.hub.server.close());
  const { token, caFingerprint } = await h.enrollment.createToken({ cluster: "beijing", ttlMs: HOUR });
  const path = join(await tempDir(), "credentials.json");
  // The first process gives up at once (one attempt), as one killed mid-enrollment would.
  await t.rejects(
    ensureAgentCredentials({
      store: fileCredentialStore(path),
      hub: h.hub.address,
      token,
      caHash: caFingerprint,
      attempts: 1,
    }),
  );
  t.match(readFileSync(`${path}.enrolling.key`, "utf8"), /PRIVATE KEY/, "the enrollment key is kept");
  await h.back();
  const credentials = await ensureAgentCredentials({
    store: fileCredentialStore(path),
    hub: h.hub.address,
    token,
    caHash: caFingerprint,
  });
  t.equal(credentials.certPem, h.issued[0], "the restarted agent gets the certificate issued before");
  t.throws(() => readFileSync(`${path}.enrolling.key`), "the enrollment key goes once saved");
});

t.test("a refused enrollment is not retried", async (t) => {
  const dir = await tempDir();
  const ca = openCertificateAuthority({ dataDir: dir });
  const enrollment = createEnrollment({
    ca,
    tokens: fileTokenStore(join(dir, "tokens.json")),
    clusterExists,
  });
  const hub = await startTunnelHub({ enrollment }, dir);
  t.teardown(() => hub.server.close());
  const { caFingerprint } = await enrollment.createToken({ cluster: "beijing", ttlMs: HOUR });
  const retried: string[] = [];
  await t.rejects(
    ensureAgentCredentials({
      store: fileCredentialStore(join(await tempDir(), "credentials.json")),
      hub: hub.address,
      token: "rlt.000000000000.nope",
      caHash: caFingerprint,
      backoff: { initialMs: 10, maxMs: 10 },
      onRetry: (error) => retried.push(error.message),
    }),
    /authentication methods failed/,
  );
  t.same(retried, [], "no retry of a refusal");
});
