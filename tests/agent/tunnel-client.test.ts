import { join } from "node:path";
import t from "tap";
import { startAgentTunnel } from "../../operators/agent/tunnel-client.ts";
import { createHubTunnel } from "../../operators/hub/tunnel-server.ts";
import { fileCredentialStore } from "../../operators/lib/tunnel/index.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { HOUR, helloInfo, tempDir } from "../lib/tunnel/fixture.ts";

t.test(
  "an agent enrolls once with its token and reconnects with stored credentials after a restart",
  async (t) => {
    const hubDir = await tempDir();
    const sessions: string[] = [];
    const hub = createHubTunnel({
      dataDir: hubDir,
      clusterExists: (name) => name === "local",
      onAgentSession: (s) => {
        sessions.push(s.cluster);
        s.send({ type: "snapshot", generation: 1, objects: [] });
      },
    });
    const { port } = await hub.server.listen(0, "127.0.0.1");
    t.teardown(() => hub.server.close());
    const address = `127.0.0.1:${port}`;
    const { token, caFingerprint } = await hub.enrollment.createToken({ cluster: "local", ttlMs: HOUR });
    const store = fileCredentialStore(join(await tempDir(), "credentials.json"));

    const first = await startAgentTunnel({
      hub: address,
      store,
      token,
      caHash: caFingerprint,
      hello: helloInfo,
      backoff: { initialMs: 20, maxMs: 100 },
    });
    await waitFor("the first session", () => sessions.length === 1);
    await first.stop();
    const stored = await store.load();
    t.equal(stored?.cluster, "local");

    // The token is spent; a restarted agent must not need it.
    const second = await startAgentTunnel({
      hub: address,
      store,
      hello: helloInfo,
      backoff: { initialMs: 20, maxMs: 100 },
    });
    t.teardown(() => second.stop());
    await waitFor("the second session", () => sessions.length === 2);
    t.same(sessions, ["local", "local"]);
    t.equal(second.credentials.certPem, stored?.certPem, "the stored certificate was reused");
  },
);

t.test("an agent that is not enrolled and has no token says how to enroll", async (t) => {
  const store = fileCredentialStore(join(await tempDir(), "credentials.json"));
  await t.rejects(
    startAgentTunnel({ hub: "127.0.0.1:1", store, hello: helloInfo }),
    /not enrolled yet: run `rlark token create/,
  );
});
