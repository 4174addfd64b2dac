// The faults the soak injects, one at a time, each ending with the part back (restarted, resumed),
// as a supervisor would bring it back: kill -9 of the leading hub, of the standby, of an agent,
// of an API server, of etcd and of the git server; SIGSTOP of an agent past the hub's heartbeat
// deadline, then SIGCONT; kill -9 of a kwok cluster's nodeserver; an agent's tunnel made half-open (silent both ways, no close) for as
// long, then healed.
import type { ChildProcess } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { onRealServers, waitFor } from "../../tests/helpers/wait-for.ts";
import { killAndRestart } from "./fleet-process.ts";
import { dropTunnel, tunnelOf } from "./half-open.ts";
import type { Random } from "./random.ts";
import { leader, type World } from "./world.ts";

export const FAULTS = [
  "leader",
  "standby",
  "agent",
  "agent-sigstop",
  "tunnel-half-open",
  "nodeserver",
  "apiserver",
  "etcd",
  "git",
] as const;
export type Fault = (typeof FAULTS)[number];

/** Faults that stop a process of the fleet: only on a fleet of the soak's own (hack/chaos/soak). */
export const FLEET_FAULTS: readonly Fault[] = ["apiserver", "etcd"];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function killed(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

/** Pids whose command line holds every one of `parts` (the git daemon of the soak's server). */
async function pidsWith(parts: string[]): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (parts.every((p) => cmdline.includes(p))) found.push(Number(entry));
  }
  return found;
}

/**
 * Injects `fault` and brings the part back; resolves with what was done (a log line), or
 * undefined when the fault had nothing to act on (no leader at that moment).
 */
export async function inject(
  fault: Fault,
  world: World,
  random: Random,
  fleetDir: string,
): Promise<string | undefined> {
  const down = 500 + random.int(3000);
  switch (fault) {
    case "leader":
    case "standby": {
      const leading = await leader(world);
      if (!leading) return undefined;
      const hub = fault === "leader" ? leading : world.hub.find((h) => h !== leading)!;
      if (hub.child) world.intended.add(hub.child);
      await killed(hub.child);
      await sleep(down);
      world.hubs.start(hub, world.hubFlags.get(hub));
      return `kill -9 hub ${hub.name} (${fault}), restarted after ${down} ms`;
    }
    case "agent": {
      const name = random.pick(Object.keys(world.agents).sort()) as keyof World["agents"];
      const agent = world.agents[name];
      world.intended.add(agent.child);
      await killed(agent.child);
      await sleep(down);
      agent.restart();
      return `kill -9 agent ${name}, restarted after ${down} ms`;
    }
    case "agent-sigstop": {
      const name = random.pick(Object.keys(world.agents).sort()) as keyof World["agents"];
      const agent = world.agents[name];
      // Past three missed heartbeats (10 s each): the hub marks the cluster Offline meanwhile.
      const frozen = 20_000 + random.int(20_000);
      agent.child.kill("SIGSTOP");
      await sleep(frozen);
      agent.child.kill("SIGCONT");
      return `SIGSTOP agent ${name} for ${frozen} ms`;
    }
    case "tunnel-half-open": {
      const name = random.pick(Object.keys(world.agents).sort()) as keyof World["agents"];
      const agent = world.agents[name];
      // Past the SSH keepalive (10 s × 2) on both ends: each drops the silent connection.
      const silent = 20_000 + random.int(20_000);
      const tunnel = agent.child.pid
        ? await tunnelOf(
            agent.child.pid,
            world.hub.map((h) => h.ssh),
          )
        : undefined;
      if (!tunnel) return undefined;
      const heal = await dropTunnel(tunnel);
      await sleep(silent);
      await heal();
      return `half-open tunnel of agent ${name} (:${tunnel.local} → :${tunnel.remote}) for ${silent} ms`;
    }
    case "nodeserver": {
      const name = random.pick(Object.keys(world.nodeservers).sort()) as keyof World["nodeservers"];
      const nodeserver = world.nodeservers[name];
      world.intended.add(nodeserver.child);
      await killed(nodeserver.child);
      await sleep(down);
      nodeserver.restart();
      return `kill -9 nodeserver ${name}, restarted after ${down} ms`;
    }
    case "apiserver": {
      const name = `fleet-${1 + random.int(2)}-kube-apiserver`;
      await killAndRestart(fleetDir, name, down);
      return `kill -9 ${name}, restarted after ${down} ms`;
    }
    case "etcd":
      await killAndRestart(fleetDir, "etcd", down);
      return `kill -9 etcd, restarted after ${down} ms`;
    case "git": {
      const git = world.hubs.git;
      const port = new URL(git.daemonUrl).port;
      const pids = await pidsWith(["daemon", `--port=${port}`, git.root]);
      for (const pid of pids) process.kill(pid, "SIGKILL");
      // The helper's record of its daemon: cleared once the process is gone, then started again
      // on the same port.
      await git.stopDaemon();
      await sleep(down);
      await waitFor("git daemon back", () => git.startDaemon().then(() => true), onRealServers);
      return `kill -9 git daemon (${pids.length} processes), restarted after ${down} ms`;
    }
  }
}
