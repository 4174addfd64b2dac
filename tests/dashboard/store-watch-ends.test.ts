// The dashboard's User, Team and AccessPolicy watches on the kubernetes store end when their
// stream to the apiserver breaks (an apiserver restart, a reset). Opened once, they left a User
// removed from git its open event streams (until the 60 s backstop recheck, here an hour) and a
// changed Team every stream's old scope; kept open (lib/store/keep-watching.ts), the change made
// after the reset still ends the streams it concerns. Real kubernetes store (the shared fleet's
// apiserver) through a TCP proxy whose connections the test resets.
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, get, type IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { loadOrCreateJwtSecret, signJwt } from "../../operators/dashboard/auth/index.ts";
import { createDashboard } from "../../operators/dashboard/index.ts";
import { adminTokenAuthenticator, anyOf, createRouter } from "../../operators/lib/http/index.ts";
import { recordingLogger } from "../agent-sync/fixtures.ts";
import { kubeStoreFixture } from "../helpers/kube-store.ts";
import { retriedWrite, storeThroughProxy } from "../helpers/store-through-proxy.ts";
import { onKube, waitFor } from "../helpers/wait-for.ts";

interface Stream {
  status: number;
  /** Bytes of the body so far. */
  text: string;
  ended: boolean;
}

t.test(
  "a User removed and a Team changed after the dashboard's watches ended still end the streams they concern",
  async (t) => {
    const fixture = await kubeStoreFixture(t);
    const { store, proxy } = await storeThroughProxy(t, fixture);
    const user = (name: string, role: string) => ({
      apiVersion: "rlinf.io/v1alpha1",
      kind: "User",
      metadata: { name },
      spec: { roles: [role] },
    });
    await store.create(user("root", "admin"));
    await store.create(user("carol", "viewer"));

    const dataDir = await mkdtemp(path.join(tmpdir(), "rlark-dashboard-watch-"));
    t.teardown(() => rm(dataDir, { recursive: true, force: true }));
    const logger = recordingLogger();
    const adminToken = adminTokenAuthenticator("admin-token-of-this-test");
    const dashboard = await createDashboard({
      store,
      dataDir,
      adminToken,
      sourceStatus: () => ({ state: "Synced" }),
      logger,
      // The backstop recheck out of the way: what this shows is the User watch.
      principalRecheckMs: 3_600_000,
    });
    t.teardown(() => dashboard.close());
    const server = createServer(
      createRouter({
        routes: dashboard.routes,
        authenticate: anyOf(dashboard.authenticator, adminToken),
        unauthenticated: "log in",
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    t.teardown(() => {
      server.closeAllConnections();
      server.close();
    });
    const port = (server.address() as { port: number }).port;
    const secret = await loadOrCreateJwtSecret(dataDir);
    const now = Math.floor(Date.now() / 1000);
    const token = (sub: string, role: "admin" | "viewer") =>
      signJwt({ sub, role, iat: now, exp: now + 3600 }, secret);
    const open = (jwt: string) => {
      const stream: Stream = { status: 0, text: "", ended: false };
      const req = get(`http://127.0.0.1:${port}/api/v1/events?token=${jwt}`, (res: IncomingMessage) => {
        stream.status = res.statusCode ?? 0;
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          stream.text += chunk;
        });
        res.on("close", () => {
          stream.ended = true;
        });
      });
      req.on("error", () => {
        stream.ended = true;
      });
      t.teardown(() => req.destroy());
      return stream;
    };
    const snapshotOf = (stream: Stream, who: string) =>
      waitFor(`${who}'s stream sends its snapshot`, () => stream.text.includes("event: snapshot"), onKube);

    const root = open(token("root", "admin"));
    await snapshotOf(root, "root");
    t.equal(root.status, 200);

    proxy.reset();
    await retriedWrite("User root deleted", () => store.delete("User", undefined, "root"));
    await waitFor("root's open stream ends", () => root.ended, onKube);
    const again = open(token("root", "admin"));
    await waitFor("root's token answered", () => again.status !== 0, onKube);
    t.equal(again.status, 401, "root's token is refused");

    // Scoped streams end on every change of a Team (and once on each watch opened again): a stream
    // opened after the Team and AccessPolicy watches were opened again must end when a Team changes.
    await waitFor(
      "the Team and AccessPolicy watches opened again",
      () =>
        ["Team", "AccessPolicy"].every((kind) =>
          logger.lines.some((l) => l.message === "store watch opened again" && l.fields?.kind === kind),
        ),
      onKube,
    );
    const carol = open(token("carol", "viewer"));
    await snapshotOf(carol, "carol");
    t.equal(carol.ended, false, "carol's stream is open");
    await retriedWrite("Team robots created", () =>
      store.create({
        apiVersion: "rlinf.io/v1alpha1",
        kind: "Team",
        metadata: { name: "robots" },
        spec: { members: ["carol"] },
      }),
    );
    await waitFor("carol's stream ends (rescoped)", () => carol.ended, onKube);
  },
);
