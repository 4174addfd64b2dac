// AgentGroup end to end: a real `rlark agent` process runs its SWIM member on UDP and reports its
// view to a real hub. A member holding the key derived from that cluster's credentials joins it
// and, once closed, is reported dead; the agent of another cluster, told to join, never appears:
// its key is another cluster's.
import { createSocket } from "node:dgram";
import { readFile } from "node:fs/promises";
import path from "node:path";
import t from "tap";
import type { Hub } from "../../../operators/hub/hub.ts";
import { systemClock } from "../../../operators/lib/clock.ts";
import { groupKey, SwimMember, UdpTransport } from "../../../operators/lib/swim/index.ts";
import { agentEnrollment, startAgentProcess } from "../../helpers/agent-process.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { rlark } from "../../helpers/rlark-cli.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const slow = { ...onRealServers, attempts: 1200 };
type Group = {
  member: string;
  alive: number;
  suspect: number;
  dead: number;
  left: number;
  members?: { id: string; state: string }[];
};

const cluster = (name: string) =>
  `apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: ${name}\nspec:\n  runtime: process\n`;

/** A UDP port free right now on 127.0.0.1. */
async function freeUdpPort(): Promise<number> {
  const socket = createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

async function groupOf(hub: Hub, name: string): Promise<Group | undefined> {
  return ((await hub.store.get("Cluster", undefined, name))?.status as { agentGroup?: Group } | undefined)
    ?.agentGroup;
}

t.test(
  "an agent's member admits a holder of its cluster's key, reports it dead once closed, and never another cluster's agent",
  async (t) => {
    const { hub } = await startHubOnGit(t, { files: { "c1.yaml": cluster("c1"), "c2.yaml": cluster("c2") } });
    const [p1, p2] = [await freeUdpPort(), await freeUdpPort()];
    const one = await agentEnrollment(hub, "c1");
    const two = await agentEnrollment(hub, "c2");
    const agents = [
      startAgentProcess(
        hub,
        one.stateDir,
        ["--node-name", "m1", "--group-listen", `127.0.0.1:${p1}`],
        one.token,
      ),
      startAgentProcess(
        hub,
        two.stateDir,
        ["--node-name", "m2", "--group-listen", `127.0.0.1:${p2}`, "--group-join", `127.0.0.1:${p1}`],
        two.token,
      ),
    ];
    t.teardown(() => {
      for (const agent of agents) agent.kill("SIGKILL");
    });
    t.match(await waitFor("c1 reports its group", () => groupOf(hub, "c1"), slow), {
      member: "m1",
      alive: 1,
      members: [{ id: "m1", state: "alive" }],
    });
    await waitFor("c2 reports its group", () => groupOf(hub, "c2"), slow);
    const c1 = (await hub.store.get("Cluster", undefined, "c1"))?.status as
      | { capabilities?: { name: string }[] }
      | undefined;
    const caps = c1?.capabilities ?? [];
    t.match(
      caps.find((c) => c.name === "network-probe"),
      { process: "RUNNING", health: "READY", message: `AgentGroup member on 127.0.0.1:${p1}` },
    );

    // A member with c1's key: what the agent derives from its private key, and nothing else joins.
    const credentials = JSON.parse(await readFile(path.join(one.stateDir, "credentials.json"), "utf8")) as {
      privateKeyPem: string;
    };
    const transport = await UdpTransport.open({ host: "127.0.0.1", port: 0 });
    const probe = new SwimMember({
      id: "probe-node",
      key: groupKey(credentials.privateKeyPem, "c1"),
      transport,
      clock: systemClock,
      seeds: [`127.0.0.1:${p1}`],
    });
    probe.start();
    t.teardown(() => probe.stop());
    await waitFor(
      "the keyed member joins c1's group",
      async () => (await groupOf(hub, "c1"))?.alive === 2,
      slow,
    );
    t.same(
      probe.members().map((m) => [m.id, m.state]),
      [
        ["m1", "alive"],
        ["probe-node", "alive"],
      ],
      "and it sees the agent's member",
    );
    await probe.stop();
    await waitFor(
      "c1 reports the closed member dead",
      async () => (await groupOf(hub, "c1"))?.dead === 1,
      slow,
    );

    const views = [await groupOf(hub, "c1"), await groupOf(hub, "c2")];
    t.notOk(
      views[0]?.members?.some((m) => m.id === "m2"),
      "c2's agent, with another cluster's key, is not in c1's group",
    );
    t.match(views[1], { member: "m2", alive: 1, dead: 0 }, "nor does c2's member hear anyone");
    const status = await rlark(["status", "--hub", hub.url, "--token", hub.adminToken]);
    t.match(status.stdout, /c1 +process +Online +1 alive, 1 dead /);

    const bad = await rlark([
      "agent",
      "--hub",
      hub.sshAddress,
      "--state-dir",
      one.stateDir,
      "--group-listen",
      "localhost:7946",
    ]);
    // refused as a usage error before anything starts: the running agent's state dir is untouched
    t.equal(bad.code, 2);
    t.match(bad.stderr, /--group-listen "localhost:7946" is not ipv4:port/);
  },
);
