// The data path survives the loss of what it talks to, on the real runtime path: two
// process-runtime agent processes (each running its cluster's nodeserver) and a hub. Restarting
// the target's agent, the source's agent, or the hub each breaks the streams that crossed it
// cleanly (the pod's program sees an error, not a hang), new connections succeed within seconds,
// and the processes that stayed hold as many fds as before.
import {
  chmodSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t, { type Test } from "tap";
import { readNodeserverStats } from "../../operators/agent/nodeserver-stats.ts";
import { DomainClusters, podTaskYaml } from "../helpers/domain-clusters.ts";
import { domainYaml, jobYaml } from "../helpers/job-yaml.ts";
import { ECHO, ROUND_TRIP, STREAM } from "../helpers/python-echo.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const listFds = (pid: number | undefined) =>
  readdirSync(`/proc/${pid}/fd`).map((f) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${f}`);
    } catch {
      return "?";
    }
  });

t.test("agent, hub and nodeserver restarts mid-stream", async (t) => {
  const id = Math.floor(Math.random() * 60);
  const m = (pod: string) => `rlark-rs-${process.pid}-${id}-${pod}`;
  const echo = path.join(mkdtempSync(path.join(tmpdir(), "rlark-restarts-")), "echo.py");
  writeFileSync(echo, ECHO);
  // Pod B's program runs as the pods' uid (not root): mkdtemp's 0700 would keep it out.
  chmodSync(path.dirname(echo), 0o755);
  t.teardown(() => rmSync(path.dirname(echo), { recursive: true, force: true }));
  const bed = await DomainClusters.start(t, ["c1", "c2"], {
    "domain.yaml": domainYaml("train", `100.${64 + id}.0.0/24`),
    "train.yaml": jobYaml(
      "train",
      [podTaskYaml("a", "c1", "sleep 3600", m("a")), podTaskYaml("b", "c2", `python3 ${echo}`, m("b"))],
      { domain: "train" },
    ),
  });
  const vip = await bed.vip("c2", m("b"));
  const roundTrip = async () =>
    (await bed.run(m("a"), "python3", ["-c", ROUND_TRIP, vip]).catch(() => "")).trim() === "hi";
  // After a restart the agents come back on their backoff (up to 30 s between tries) once the
  // restarted side is up, which on a busy machine takes its own while: bounded at two minutes.
  const recovered = () =>
    waitFor("a new connection succeeds", roundTrip, { attempts: 1200, everyMs: 100 }).catch(
      (error: Error) => {
        throw new Error(`${error.message}\n${bed.logTails()}`);
      },
    );
  await recovered();

  async function brokenBy(t: Test, disrupt: () => Promise<void>): Promise<void> {
    const stream = await bed.spawn(m("a"), "python3", ["-c", STREAM, vip]);
    let out = "";
    stream.stdout?.on("data", (c: Buffer) => {
      out += c.toString();
    });
    await waitFor("the stream flowing", () => out.includes("streaming"), { attempts: 400, everyMs: 25 });
    const exited = new Promise<number | null>((resolve) => stream.once("close", resolve)); // output read to the end
    await disrupt();
    t.equal(await exited, 3, "the pod's program saw its stream break");
    t.match(out, /broken/);
    await recovered();
    t.pass("new connections succeed");
  }

  // No stream left on a cluster's nodeserver, whose fds are then compared.
  let last = "";
  const settled = (cluster: string) =>
    waitFor(
      `no stream left on ${cluster}'s nodeserver`,
      async () => {
        const stats = await readNodeserverStats(`${bed.agents.get(cluster)?.runDir}/nodeserver.sock`);
        last = JSON.stringify(stats.train);
        return stats.train?.peers.every((p) => p.activeStreams === 0);
      },
      { attempts: 300, everyMs: 100 },
    ).catch((error: Error) => {
      throw new Error(`${error.message}; its /stats: ${last}`);
    });
  const agentPid = (cluster: string) => bed.agents.get(cluster)?.child.pid;
  // An agent's fds at rest: the shortest of a few looks. A short-lived child's pipe (a command
  // the agent runs now and then) is open for a moment and is no leak.
  const restingFds = async (cluster: string) => {
    let least = listFds(agentPid(cluster));
    for (let i = 0; i < 10; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const now = listFds(agentPid(cluster));
      if (now.length < least.length) least = now;
    }
    return least;
  };
  const sameFds = async (t: Test, cluster: string, before: string[]) => {
    await settled(cluster);
    // The look that matched is the one judged: a later look may catch such a child again. A
    // reconnect on a loaded machine can take its while: up to 30 s.
    let after = listFds(agentPid(cluster));
    await waitFor(
      `${cluster}'s agent back to its fd count`,
      () => {
        after = listFds(agentPid(cluster));
        return after.length === before.length;
      },
      onRealServers,
    ).catch(() => undefined);
    // What differs goes in the assertion's own name, which CI's summary of failures shows.
    const left = [...before];
    const added = after.filter((fd) => {
      const i = left.indexOf(fd);
      if (i < 0) return true;
      left.splice(i, 1);
      return false;
    });
    const differs =
      after.length === before.length ? "" : ` (added ${JSON.stringify(added)}, gone ${JSON.stringify(left)})`;
    t.equal(after.length, before.length, `${cluster}'s agent holds as many fds as before${differs}`);
  };

  await t.test("the target cluster's agent (and its nodeserver) restarts", async (t) => {
    await settled("c1");
    const before = await restingFds("c1");
    await brokenBy(t, async () => {
      await bed.stopAgent("c2");
      bed.startAgent("c2");
    });
    await sameFds(t, "c1", before);
  });

  await t.test("the source cluster's agent (and its nodeserver) restarts", async (t) => {
    await settled("c2");
    const before = await restingFds("c2");
    await brokenBy(t, async () => {
      await bed.stopAgent("c1");
      bed.startAgent("c1");
    });
    await sameFds(t, "c2", before);
  });

  // How often the agent of `cluster` has said `text` in its log.
  const logged = (cluster: string, text: string) =>
    readFileSync(bed.agents.get(cluster)?.log as string, "utf8").split(text).length - 1;
  const connects = (cluster: string) => [
    logged(cluster, "connected to the hub"),
    logged(cluster, "reverse link to the hub up"),
  ];

  await t.test("the hub restarts", async (t) => {
    await settled("c1");
    await settled("c2");
    const before = { c1: await restingFds("c1"), c2: await restingFds("c2") };
    const was = { c1: connects("c1"), c2: connects("c2") };
    await brokenBy(t, async () => {
      // On the addresses the agents know: a hub that came back on another SSH port would leave
      // them retrying the old one forever, one fd short of before.
      await bed.running.restart({ domainRelay: bed.relay, ssh: bed.hub.sshAddress });
    });
    // Both of an agent's links to the hub (its tunnel, its nodeserver's reverse link) went with it
    // and come back on their own backoff: its fds are compared once it holds both again.
    for (const cluster of ["c1", "c2"] as const)
      await waitFor(
        `${cluster}'s agent back on the new hub (its tunnel and its reverse link)`,
        () => connects(cluster).every((n, i) => n > (was[cluster][i] ?? 0)),
        { attempts: 600, everyMs: 100 },
      ).catch((error: Error) => {
        const log = readFileSync(bed.agents.get(cluster)?.log as string, "utf8");
        throw new Error(
          `${error.message}: [tunnel, reverse link] ups ${JSON.stringify(was[cluster])} before, ${JSON.stringify(connects(cluster))} now; its log ends: ${log.slice(-3000)}`,
        );
      });
    await sameFds(t, "c1", before.c1);
    await sameFds(t, "c2", before.c2);
  });
});
