// Leader election on a real Lease of the fleet's kube-apiserver (operators/lib/leader-election.ts):
// one candidate leads at a time, a leader that fails to start gives the lead up rather than
// holding the Lease while doing nothing, a slow start does not stop the renewals, and a leader
// whose apiserver stops answering stops leading by its renew deadline.
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import t from "tap";
import { LeaderElection } from "../../operators/lib/leader-election.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { fleetCluster, testNamespace } from "../helpers/fleet.ts";
import { onKube, waitFor } from "../helpers/wait-for.ts";

const { kubeConfig } = fleetCluster(0);
const quick = { leaseMs: 3_000, renewDeadlineMs: 2_000, retryMs: 250 };

t.test("a leader whose start fails stops leading, and another candidate takes the Lease", async (t) => {
  const namespace = await testNamespace(t, kubeConfig, "lease");
  let lost = 0;
  const failing = new LeaderElection({
    kubeConfig,
    namespace,
    name: "rlark-hub",
    identity: "failing",
    ...quick,
    logger: silentLogger,
    onStartedLeading: () => {
      throw new Error("the store is not ready");
    },
    onStoppedLeading: () => {
      lost++;
    },
  });
  t.teardown(() => failing.stop());
  failing.start();
  await waitFor("the failing leader gives the lead up", () => lost > 0, onKube);
  t.equal(failing.leading, false, "it no longer says it leads");
  // as the hub does on losing the lead: it stops (exits), and its Lease runs out
  await failing.stop();

  let started = false;
  const standby = new LeaderElection({
    kubeConfig,
    namespace,
    name: "rlark-hub",
    identity: "standby",
    ...quick,
    logger: silentLogger,
    onStartedLeading: () => {
      started = true;
    },
    onStoppedLeading: () => {},
  });
  t.teardown(() => standby.stop());
  standby.start();
  await waitFor("the standby leads", () => started && standby.leading, onKube);
  t.ok(standby.leading);
});

t.test("a leader goes on renewing while it starts, however long that takes", async (t) => {
  const namespace = await testNamespace(t, kubeConfig, "lease");
  let lost = 0;
  let startDone = false;
  const slow = new LeaderElection({
    kubeConfig,
    namespace,
    name: "rlark-hub",
    identity: "slow",
    ...quick,
    logger: silentLogger,
    // longer than the renew deadline, as applying a large revision may be
    onStartedLeading: () =>
      new Promise<void>((resolve) =>
        setTimeout(() => {
          startDone = true;
          resolve();
        }, quick.renewDeadlineMs * 2),
      ),
    onStoppedLeading: () => {
      lost++;
    },
  });
  t.teardown(() => slow.stop());
  slow.start();
  await waitFor("the slow start to finish", () => startDone, onKube);
  t.equal(lost, 0, "it never lost the lead");
  t.ok(slow.leading, "it still leads");
});

t.test("a leader whose apiserver hangs stops leading by the renew deadline", async (t) => {
  const namespace = await testNamespace(t, kubeConfig, "lease");
  // A TCP relay to the apiserver that can be frozen: connections stay open, nothing comes back.
  const server = new URL(kubeConfig.getCurrentCluster()!.server);
  let frozen = false;
  const sockets = new Set<Socket>();
  const relay = createServer((client) => {
    if (frozen) return; // accepted, never answered
    const upstream = connect(Number(server.port), server.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => sockets.delete(s));
    }
    client.on("data", (chunk) => frozen || upstream.write(chunk));
    upstream.on("data", (chunk) => frozen || client.write(chunk));
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    relay.close();
  });
  const viaRelay = new KubeConfig();
  viaRelay.loadFromString(kubeConfig.exportConfig());
  const cluster = viaRelay.getCurrentCluster()!;
  const port = (relay.address() as AddressInfo).port;
  viaRelay.clusters = viaRelay.clusters.map((c) =>
    c.name === cluster.name ? { ...c, server: `https://127.0.0.1:${port}` } : c,
  );
  let lost = 0;
  const leader = new LeaderElection({
    kubeConfig: viaRelay,
    namespace,
    name: "rlark-hub",
    identity: "cut-off",
    ...quick,
    logger: silentLogger,
    onStartedLeading: () => {},
    onStoppedLeading: () => {
      lost++;
    },
  });
  t.teardown(() => leader.stop());
  leader.start();
  await waitFor("it leads", () => leader.leading, onKube);
  frozen = true;
  await waitFor("it stops leading, its requests hanging", () => lost > 0, onKube);
  t.equal(leader.leading, false);
});
