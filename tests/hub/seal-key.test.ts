// The hub's sealing key: opened from <data-dir>/seal at start, served to authenticated clients
// as PEM with the key ids it opens, rotated by admins, and the same after a restart.
import { statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import t from "tap";
import { createHubHttpHandler, hubApiRoutes } from "../../operators/hub/http/api-server.ts";
import { publicKeyPemId, SealKeyring, sealValue } from "../../operators/lib/seal/index.ts";
import { openSqliteStore } from "../../operators/lib/store/index.ts";
import { defaultHubFlags } from "../helpers/hub-flags.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";

async function get(url: string, token?: string, method = "GET") {
  const response = await fetch(url, { method, headers: token ? { authorization: `Bearer ${token}` } : {} });
  return {
    status: response.status,
    ids: response.headers.get("x-rlark-seal-key-ids"),
    text: await response.text(),
  };
}

t.test(
  "the hub serves its sealing key to authenticated clients, rotates it for admins, keeps it over a restart",
  async (t) => {
    const running = await startHubOnGit(t);
    let hub = running.hub;
    const dir = path.join(running.dataDir, "seal");
    t.equal(statSync(dir).mode & 0o777, 0o700);
    t.equal(statSync(path.join(dir, `${hub.sealKeys.currentKeyId()}.key`)).mode & 0o777, 0o600);

    t.equal((await get(`${hub.url}/api/v1/seal-key`)).status, 401, "no token, no key");
    t.equal((await get(`${hub.url}/api/v1/seal-key`, "wrong")).status, 401);
    const first = await get(`${hub.url}/api/v1/seal-key`, hub.adminToken);
    t.equal(first.status, 200);
    t.match(first.text, /^-----BEGIN PUBLIC KEY-----/);
    t.equal(publicKeyPemId(first.text), hub.sealKeys.currentKeyId());
    t.equal(first.ids, hub.sealKeys.currentKeyId());
    const before = sealValue("v1", first.text, "secret/ml/db/password");

    t.equal(
      (await get(`${hub.url}/api/v1/seal-key/rotate`, hub.adminToken)).status,
      405,
      "GET does not rotate",
    );
    t.equal((await get(`${hub.url}/api/v1/seal-key/rotate`, undefined, "POST")).status, 401);
    const rotated = await get(`${hub.url}/api/v1/seal-key/rotate`, hub.adminToken, "POST");
    t.equal(rotated.status, 200);
    const { keyId, keyIds } = JSON.parse(rotated.text) as { keyId: string; keyIds: string[] };
    t.not(keyId, publicKeyPemId(first.text));
    t.same(keyIds, [keyId, publicKeyPemId(first.text)]);
    const second = await get(`${hub.url}/api/v1/seal-key`, hub.adminToken);
    t.equal(publicKeyPemId(second.text), keyId, "new seals use the new key");
    t.equal(second.ids, keyIds.join(","));

    hub = await running.restart();
    t.equal(hub.sealKeys.currentKeyId(), keyId);
    t.equal(hub.sealKeys.unseal(before, "secret/ml/db/password").toString(), "v1", "the old key still opens");
  },
);

t.test("only admins rotate the sealing key; viewers read the public key", async (t) => {
  const keys = await SealKeyring.open(path.join(t.testdir(), "seal"));
  const store = openSqliteStore({ dataDir: t.testdir() });
  t.teardown(() => store.close());
  const server = createServer(
    createHubHttpHandler({
      authenticate: (token) => (token === "viewer" ? { subject: "v", role: "viewer" } : undefined),
      routes: hubApiRoutes({
        store,
        sourceStatus: () => ({}),
        metricsText: () => "",
        sealKeys: keys,
        ready: () => ({ ready: true, message: "ok" }),
      }),
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/seal-key`;
  t.equal((await get(url, "viewer")).status, 200);
  const refused = await get(`${url}/rotate`, "viewer", "POST");
  t.equal(refused.status, 403);
  t.equal(keys.keyIds().length, 1, "nothing rotated");
  t.equal((await get(`${url}/reseal`, "viewer", "POST")).status, 403, "re-sealing is for admins too");
});

t.test("re-sealing answers sealed values only: each opened for its context, or why not", async (t) => {
  const { hub } = await startHubOnGit(t);
  const oldPem = hub.sealKeys.currentPublicKeyPem();
  const context = "secret/ml/db/password";
  const old = sealValue("reseal-me", oldPem, context);
  await hub.sealKeys.rotate();
  const post = (body: string) =>
    fetch(`${hub.url}/api/v1/seal-key/reseal`, {
      method: "POST",
      headers: { authorization: `Bearer ${hub.adminToken}` },
      body,
    });
  const answer = await post(
    JSON.stringify({
      items: [
        { sealed: old, context },
        { sealed: old, context: "secret/ml/db/user" },
      ],
    }),
  );
  t.equal(answer.status, 200);
  const text = await answer.text();
  t.notMatch(text, /reseal-me/);
  const { items } = JSON.parse(text) as { items: Array<{ sealed?: string; error?: string }> };
  t.equal(hub.sealKeys.unseal(items[0]?.sealed as string, context).toString(), "reseal-me");
  t.match(items[0]?.sealed, new RegExp(`^rlark-sealed:v1:${hub.sealKeys.currentKeyId()}:`));
  t.match(items[1], { error: /does not open for "secret\/ml\/db\/user"/ });
  t.equal((await post("not json")).status, 400);
  t.equal((await post(JSON.stringify({ items: [{ sealed: old }] }))).status, 400);
  t.equal((await post("x".repeat(16 * 1024 * 1024 + 1)).catch(() => ({ status: 413 }))).status, 413);
});

t.test(
  "--seal-dir (or RLARK_SEAL_DIR) puts the sealing keys where several hubs can share them",
  async (t) => {
    const { hubOptionsFrom } = await import("../../operators/cli/hub-options.ts");
    const from = (extra: object, env: NodeJS.ProcessEnv) =>
      hubOptionsFrom({ ...defaultHubFlags(), ...extra }, { intervalMs: 1 }, env);
    t.equal(
      (await from({ sealDir: "/etc/rlark/seal" }, { RLARK_SEAL_DIR: "/x" })).sealDir,
      "/etc/rlark/seal",
    );
    t.equal((await from({}, { RLARK_SEAL_DIR: "/etc/rlark/seal" })).sealDir, "/etc/rlark/seal");
    t.equal((await from({}, {})).sealDir, undefined);

    const shared = path.join(t.testdir(), "shared-seal");
    const keys = await SealKeyring.open(shared);
    const { hub } = await startHubOnGit(t, { sealDir: shared });
    t.equal(hub.sealKeys.currentKeyId(), keys.currentKeyId(), "the hub opens with the shared keys");
  },
);
