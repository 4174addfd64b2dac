// The hub refuses a revision whose SealedSecret values it cannot open (sealed to another hub, or
// copied from another Secret), naming file:line:field, and applies one whose values it opens.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { stringify } from "yaml";
import { SealKeyring, sealValue, secretValueContext } from "../../operators/lib/seal/index.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const GPU_A = { cluster: "gpu-a" };

const sealedSecret = (name: string, encryptedData: Record<string, string>) =>
  stringify({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "SealedSecret",
    metadata: { name, namespace: "agent-gpu-a" },
    spec: { namespace: "ml", encryptedData },
  });

t.test("a SealedSecret the hub cannot open is refused at its field; one it opens is applied", async (t) => {
  const { hub, git } = await startHubOnGit(t, { intervalMs: 100 });
  const pem = hub.sealKeys.currentPublicKeyPem();
  const stranger = await SealKeyring.open(
    path.join(await mkdtemp(path.join(tmpdir(), "rlark-seal-")), "seal"),
  );
  const api = async (route: string) =>
    (await (
      await fetch(`${hub.url}${route}`, { headers: { authorization: `Bearer ${hub.adminToken}` } })
    ).json()) as {
      state?: string;
      lastAttemptedRevision?: string;
      errors?: unknown[];
      items?: Array<{ metadata: { name: string } }>;
    };

  const bad = await git.commit({
    "secrets/db.yaml": sealedSecret("db", {
      password: sealValue("plain-db-password", pem, secretValueContext(GPU_A, "ml", "db", "password")),
      // Copied from another Secret's key: the same hub, another context.
      user: sealValue("plain-db-user", pem, secretValueContext(GPU_A, "ml", "web", "user")),
      // Sealed to another hub.
      token: sealValue(
        "plain-db-token",
        stranger.currentPublicKeyPem(),
        secretValueContext(GPU_A, "ml", "db", "token"),
      ),
    }),
  });
  let source = await api("/api/v1/source");
  await waitFor(
    "refused",
    async () => {
      source = await api("/api/v1/source");
      return source.lastAttemptedRevision === bad && source.state === "Invalid";
    },
    onRealServers,
  );
  t.equal(source.state, "Invalid");
  t.match(source.errors, [
    {
      file: "secrets/db.yaml",
      line: 10,
      path: "/spec/encryptedData/user",
      rule: "cross/sealed-value",
      message:
        /does not open on this hub: sealed value does not open for "cluster\/gpu-a\/secret\/ml\/db\/user".*seal it again/,
    },
    {
      file: "secrets/db.yaml",
      line: 11,
      path: "/spec/encryptedData/token",
      rule: "cross/sealed-value",
      message:
        /the sealed value of "token" does not open on this hub: sealed to key [0-9a-f]{16}, which this hub does not hold/,
    },
  ]);
  t.equal(source.errors?.length, 2);
  t.notMatch(JSON.stringify(source), /plain-db/);

  await git.commit({
    "secrets/db.yaml": sealedSecret("db", {
      password: sealValue("plain-db-password", pem, secretValueContext(GPU_A, "ml", "db", "password")),
    }),
  });
  // the objects are written before the source says Synced: wait for both, then check each
  await waitFor(
    "applied and synced",
    async () =>
      (await api("/api/v1/rlinf.io/v1alpha1/sealedsecrets")).items?.length === 1 &&
      (await api("/api/v1/source")).state === "Synced",
    onRealServers,
  );
  t.equal((await api("/api/v1/rlinf.io/v1alpha1/sealedsecrets")).items?.length, 1);
  t.equal((await api("/api/v1/source")).state, "Synced");
});
