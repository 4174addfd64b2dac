// A process-runtime pod of a Task in a Domain gets a network of its own (as root): a namespace
// with a veth to the host, the REDIRECT of the Domain's CIDR, and the sidecar as uid 1337 before
// its command starts inside. Stopping the pod removes all of it; a runtime that opens after a
// crash removes what no pod record accounts for.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import type { PodNetworkOptions } from "../../../../operators/agent/runtimes/process/index.ts";
import type { PodRecord } from "../../../../operators/agent/runtimes/process/pod-files.ts";
import { PodNetworks } from "../../../../operators/agent/runtimes/process/pod-network.ts";
import type { RuntimeTask } from "../../../../operators/agent/runtimes/types.ts";
import type { PeersState } from "../../../../operators/api/index.ts";
import { silentLogger } from "../../../../operators/lib/logger.ts";
import { rlarkNetPath, startNodeserver } from "../../../../operators/network/index.ts";
import { rlarkNetBinary } from "../../../helpers/domain-net.ts";
import { onProcesses, waitFor } from "../../../helpers/wait-for.ts";
import { processesWith, rawTask, tempDir } from "./helpers.ts";
import { openRuntime, waitForPod } from "./runtime-helpers.ts";

const root = join(import.meta.dirname, "../../../..");
const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: "utf8" });
const netnsList = () =>
  sh("ip", ["netns", "list"])
    .split("\n")
    .map((l) => l.split(" ")[0] ?? "")
    .filter(Boolean);
const links = () => sh("ip", ["-o", "link", "show"]);

function domainTask(name: string, marker: string): RuntimeTask {
  const task = rawTask(name, { kind: "Deployment", command: ["sh", "-c", `sleep 300 # ${marker}`] });
  task.spec.domain = "train";
  task.spec.domainCIDR = "100.99.0.0/24";
  return task;
}

t.test("a Domain pod runs in its own namespace with the REDIRECT and an unprivileged sidecar", async (t) => {
  rlarkNetBinary();
  const dir = tempDir(t);
  const runDir = join(dir, "run");
  const linkCidr = `10.${200 + ((randomBytes(1)[0] ?? 0) % 50)}.${randomBytes(1)[0] ?? 0}.0/24`;
  const podNetwork: PodNetworkOptions = {
    linkCidr,
    rlarkNet: rlarkNetPath(),
    rlark: [join(root, "node_modules/.bin/node"), join(root, "operators/cli/main.ts")],
    runDir,
  };
  // The sidecars (uid 1337) reach the nodeserver under it.
  execFileSync("chmod", ["755", dir]);
  mkdirSync(runDir, { mode: 0o755 });
  const nodeserver = await startNodeserver({ socketDir: runDir, logger: silentLogger });
  t.teardown(() => nodeserver.close());
  const stateDir = join(dir, "state");
  const { runtime } = await openRuntime(t, { stateDir, podNetwork, logger: silentLogger });
  const marker = `rlark-podnet-${randomBytes(4).toString("hex")}`;
  await runtime.apply([domainTask("web", marker)]);
  const running = await waitForPod(runtime, "web-0", "running", (p) => p.phase === "Running");
  const record = JSON.parse(
    readFileSync(join(stateDir, "pods", `${running.namespace}_web-0`, "pod.json"), "utf8"),
  ) as PodRecord;
  const network = record.network;
  if (!network) throw new Error("no network in the pod record");
  t.equal(running.podIP, network.localIP, "the pod's IP is its end of the veth");
  t.ok(netnsList().includes(network.netns), "its namespace exists");
  t.match(links(), network.hostIf, "its host link exists");
  t.match(
    sh("ip", ["netns", "exec", network.netns, "iptables", "-t", "nat", "-S", "RLARK_OUTPUT"]),
    /-d 100\.99\.0\.0\/24 .*REDIRECT --to-ports 15001/,
    "the Domain's CIDR is redirected inside",
  );

  // The sidecar learns its IP from the nodeserver; until then the command waits.
  const state: PeersState = {
    globalNamespace: "agent-local",
    domains: [
      {
        domain: "train",
        cidr: "100.99.0.0/24",
        cert: "unused",
        key: "unused",
        prefixLen: 24,
        pods: [{ name: "web-0", namespace: running.namespace, ip: "100.99.0.5", localIP: network.localIP }],
      },
    ],
  };
  nodeserver.setState(state);
  await runtime.network.applyPeersState(state);
  const [command] = await waitFor(
    "the command started",
    () => {
      const pids = processesWith(marker).filter((p) =>
        readFileSync(`/proc/${p}/cmdline`, "utf8").startsWith("sh\0-c\0sleep"),
      );
      return pids.length > 0 && pids;
    },
    onProcesses,
  );
  const inside = statSync(`/run/netns/${network.netns}`).ino;
  t.equal(statSync(`/proc/${command}/ns/net`).ino, inside, "the command runs in the pod's namespace");
  const sidecar = processesWith("sidecar").find((p) => {
    try {
      return statSync(`/proc/${p}/ns/net`).ino === inside;
    } catch {
      return false;
    }
  });
  t.ok(sidecar, "the sidecar runs in it");
  t.match(readFileSync(`/proc/${sidecar}/status`, "utf8"), /\nUid:\t1337\t1337\t1337\t1337\n/, "as uid 1337");
  t.match(sh("ip", ["netns", "exec", network.netns, "ss", "-Htln"]), /:5700\b/, "its inbound port listens");
  t.match(
    sh("ip", ["-n", network.netns, "-4", "-o", "addr", "show", "dev", "lo"]),
    / 100\.99\.0\.5\/32 /,
    "its virtual IP is on its loopback, for programs that bind or advertise it",
  );

  await runtime.apply([]);
  await waitFor("the pod gone", () => runtime.observe().pods.length === 0, onProcesses);
  t.notOk(netnsList().includes(network.netns), "its namespace is removed");
  t.notMatch(links(), network.hostIf, "its host link is removed");
  t.same(processesWith(marker), [], "nothing of it runs");
});

t.test("a runtime that opens removes the pod networks a crashed one left unrecorded", async (t) => {
  rlarkNetBinary();
  const dir = tempDir(t);
  execFileSync("chmod", ["755", dir]);
  const podNetwork: PodNetworkOptions = {
    linkCidr: `10.${200 + ((randomBytes(1)[0] ?? 0) % 50)}.${randomBytes(1)[0] ?? 0}.0/24`,
    rlarkNet: rlarkNetPath(),
    rlark: [join(root, "node_modules/.bin/node"), join(root, "operators/cli/main.ts")],
    runDir: join(dir, "run"),
  };
  const stateDir = join(dir, "state");
  const marker = `rlark-podnet-${randomBytes(4).toString("hex")}`;
  const first = await openRuntime(t, { stateDir, podNetwork, logger: silentLogger });
  await first.runtime.apply([domainTask("kept", `${marker}-kept`), domainTask("lost", `${marker}-lost`)]);
  const networkOf = async (name: string) =>
    await waitFor(
      `${name}'s network recorded`,
      () => {
        try {
          return (
            JSON.parse(
              readFileSync(join(stateDir, "pods", `agent-local_${name}-0`, "pod.json"), "utf8"),
            ) as PodRecord
          ).network;
        } catch {
          return undefined;
        }
      },
      onProcesses,
    );
  const kept = await networkOf("kept");
  const lost = await networkOf("lost");
  // a crash: the runtime goes without stopping its pods, and one pod's record is lost with it
  await first.runtime.stop();
  // the pod's own processes still run and may write there while it goes (ENOTEMPTY): retried
  rmSync(join(stateDir, "pods", "agent-local_lost-0"), {
    recursive: true,
    force: true,
    maxRetries: 20,
    retryDelay: 100,
  });
  const second = await openRuntime(t, { stateDir, podNetwork, logger: silentLogger });
  t.notOk(netnsList().includes(lost.netns), "the unrecorded namespace is removed");
  t.notMatch(links(), lost.hostIf, "with its link");
  t.ok(netnsList().includes(kept.netns), "the recorded pod's namespace stays");
  await second.runtime.apply([domainTask("kept", `${marker}-kept`)]);
  await waitForPod(
    second.runtime,
    "kept-0",
    "adopted",
    (p) => p.phase === "Running" && p.podIP === kept.localIP,
  );
  await second.runtime.apply([]);
  await waitFor("kept gone", () => second.runtime.observe().pods.length === 0, onProcesses);
  t.notOk(netnsList().includes(kept.netns), "and goes with its pod");
});

t.test("a session enters the pod's namespace, then becomes its user", async (t) => {
  const dir = tempDir(t);
  const networks = new PodNetworks(
    { linkCidr: "10.211.0.0/24", rlarkNet: "/bin/true", rlark: ["rlark"], runDir: dir },
    dir,
  );
  const network = { netns: "x", hostIf: "h", hostIP: "1", localIP: "2" };
  t.same(networks.sessionPrefix(network), ["nsenter", "--net=/run/netns/x"], "a root pod's");
  t.same(
    networks.sessionPrefix(network, ["setpriv", "--reuid=2000"]),
    ["nsenter", "--net=/run/netns/x", "setpriv", "--reuid=2000"],
    "a pod of its own user's",
  );
});
