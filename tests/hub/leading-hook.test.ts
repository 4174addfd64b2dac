// Hub.onLeading: what runs beside a hub only while it leads (the agentless clusters) starts when
// the hub has started leading, with its tunnel listening: at once on a hub that leads alone, and
// on a standby (two hubs on one kubernetes store, the shared fleet) when it takes the lead over.
import { connect } from "node:net";
import t from "tap";
import { fleetCluster, testNamespace } from "../helpers/fleet.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { kubeStoreFixture } from "../helpers/kube-store.ts";
import { onKube, waitFor } from "../helpers/wait-for.ts";

/** True when something accepts TCP connections at host:port. */
const listening = (address: string) =>
  new Promise<boolean>((resolve) => {
    const [host, port] = [address.slice(0, address.lastIndexOf(":")), Number(address.split(":").pop())];
    const socket = connect({ host, port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });

t.test("a hub that leads alone (SQLite) calls onLeading listeners at once", async (t) => {
  const { hub } = await startHubOnGit(t);
  let called = 0;
  hub.onLeading(() => called++);
  t.equal(called, 1);
  t.ok(await listening(hub.sshAddress), "its tunnel listens when the listener runs");
});

t.test("a standby calls onLeading listeners when it takes the lead, not before", async (t) => {
  const fixture = await kubeStoreFixture(t);
  const namespace = await testNamespace(t, fleetCluster(0).kubeConfig, "leading");
  const candidate = (identity: string) =>
    startHubOnGit(t, {
      store: {
        backend: "kubernetes",
        kubeconfig: fixture.kubeconfigFile,
        namespace,
        servedGroup: fixture.group,
      },
      leaderElection: { identity, leaseMs: 6000, renewDeadlineMs: 4500, retryMs: 500, onLost: () => {} },
    });
  const a = await candidate("a");
  await waitFor("hub a leads", () => a.hub.leading(), onKube);
  const b = await candidate("b");
  const events: string[] = [];
  a.hub.onLeading(() => events.push("a"));
  await waitFor("hub a's listener called", () => events.includes("a"), onKube);
  let tunnelAtCall: Promise<boolean> | undefined;
  b.hub.onLeading(() => {
    events.push("b");
    tunnelAtCall = listening(b.hub.sshAddress);
  });
  // b stays a candidate for a few of its lease checks: its listener must not run meanwhile
  for (let i = 0; i < 8; i++) await new Promise((resolve) => setTimeout(resolve, 250));
  t.same(events, ["a"], "the standby's listener waits");
  t.notOk(b.hub.leading());
  await a.hub.stop(); // releases the Lease
  await waitFor("hub b's listener called", () => events.includes("b"), onKube);
  t.ok(b.hub.leading(), "b leads");
  t.ok(await tunnelAtCall, "b's tunnel listens when its listener runs");
  t.same(events, ["a", "b"], "each listener once");
});
