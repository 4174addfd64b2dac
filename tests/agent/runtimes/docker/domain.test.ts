// Domain pods of the docker runtime on a real engine (as root), without a hub: the runtime is
// handed the peers state an agent would hand it. A pod waits for its virtual IP, then runs as a
// sidecar container holding its network (the link from the runtime's range, the REDIRECT, the
// virtual IP on its loopback) and its own container joined to it; a new virtual IP replaces the
// pod; a Task whose CIDR is missing says so; without pod networking a Domain pod is a plain one.
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { text } from "node:stream/consumers";
import t from "tap";
import type { PeersState } from "../../../../operators/api/index.ts";
import { claimNumber } from "../../../helpers/claim-number.ts";
import { startDockerd } from "../../../helpers/dockerd.ts";
import { rlarkNetBinary } from "../../../helpers/domain-net.ts";
import { dockerTask, NAMESPACE, openDockerRuntime, podOf, waitForPod } from "./helpers.ts";

const CIDR = "100.70.0.0/24";

function peers(ip: string): PeersState {
  return {
    globalNamespace: NAMESPACE,
    domains: [
      {
        domain: "lab",
        cidr: CIDR,
        cert: "",
        key: "",
        prefixLen: 24,
        pods: [{ name: "web-0", namespace: NAMESPACE, ip, globalNamespace: NAMESPACE }],
      },
    ],
  };
}

t.test("Domain pods on the docker runtime", async (t) => {
  const engine = await startDockerd(t);
  const rlarkNet = rlarkNetBinary();
  const runDir = await mkdtemp(path.join(tmpdir(), "rlark-dk-run-"));
  t.teardown(() => rm(runDir, { recursive: true, force: true }));
  const claim = claimNumber("domain-clusters-link", 200, 250);
  t.teardown(() => claim.release());
  const linkCidr = `10.${claim.value}.77.0/24`;
  const runtime = await openDockerRuntime(t, engine, {
    rlarkNet,
    podNetwork: { linkCidr, rlarkNet, runDir },
  });
  t.teardown(() => runtime.stop({ terminatePods: true }));
  const inPod = (...argv: string[]) =>
    execFileSync("docker", ["-H", engine.host, "exec", "rlark_agent-edge_web-0", ...argv], {
      encoding: "utf8",
    });
  const task = dockerTask("web", {
    command: ["sh", "-c", "sleep 1000"],
    restartPolicy: "Always",
  });
  task.spec.domain = "lab";
  task.spec.domainCIDR = CIDR;

  await t.test("a pod waits for its virtual IP, then runs in its sidecar's network", async (t) => {
    await runtime.apply([task]);
    await waitForPod(
      runtime,
      "web-0",
      "waiting for its virtual IP",
      (p) => p.reason === "WaitingForVirtualIP",
    );
    await runtime.network?.applyPeersState(peers("100.70.0.7"));
    const pod = await waitForPod(runtime, "web-0", "Running", (p) => p.phase === "Running");
    const prefix = linkCidr.split(".").slice(0, 3).join(".");
    t.match(pod.podIP, new RegExp(`^${prefix.replaceAll(".", "\\.")}\\.\\d+$`), "podIP from the link range");
    const addresses = inPod("ip", "-4", "-o", "addr");
    t.match(addresses, / lo +inet 100\.70\.0\.7\/32/, "the virtual IP on its loopback");
    t.match(addresses, new RegExp(` eth0 +inet ${(pod.podIP ?? "").replaceAll(".", "\\.")}/30`));
    const sidecar = await engine.client.getContainer("rlark_agent-edge_web-0_net").inspect();
    t.match(sidecar.Config.Labels, { "rlinf.io/sidecar": "rlark-net", "rlinf.io/virtual-ip": "100.70.0.7" });
    const pid = String(sidecar.State.Pid);
    const rules = execFileSync("nsenter", ["-t", pid, "-n", "iptables", "-t", "nat", "-S", "RLARK_OUTPUT"], {
      encoding: "utf8",
    });
    t.match(rules, /100\.70\.0\.0\/24.*REDIRECT --to-ports 15001/, "the REDIRECT of the Domain's CIDR");
    t.match(rules, /--uid-owner 1337/, "except the sidecar's own");
    t.match(
      podOf(runtime, "web-0")?.containers?.map((c) => [c.name, c.state]),
      [
        ["web", "Running"],
        ["rlark-sidecar", "Running"],
      ],
      "the sidecar is the pod's second container",
    );
    const log = await text(
      await runtime.logStream({ namespace: NAMESPACE, name: "web-0" }, { container: "rlark-sidecar" }),
    );
    t.match(
      log,
      /rlark-net: outbound on 127\.0\.0\.1:15001, inbound on 0\.0\.0\.0:5700/,
      "its log is rlark-net's",
    );
  });

  await t.test("a new virtual IP replaces the pod with its sidecar", async (t) => {
    const before = await engine.client.getContainer("rlark_agent-edge_web-0_net").inspect();
    await runtime.network?.applyPeersState(peers("100.70.0.9"));
    await waitForPod(
      runtime,
      "web-0",
      "running with the new address",
      (p) => p.phase === "Running" && / lo +inet 100\.70\.0\.9\//.test(inPodSafe()),
    );
    const after = await engine.client.getContainer("rlark_agent-edge_web-0_net").inspect();
    t.not(after.Id, before.Id, "a new sidecar");
    t.equal(after.Config.Labels["rlinf.io/virtual-ip"], "100.70.0.9");
  });

  await t.test("a Domain Task without its CIDR says so on the pod", async (t) => {
    const bad = dockerTask("nocidr", { command: ["true"] });
    bad.spec.domain = "lab";
    await runtime.apply([task, bad]);
    const state = peers("100.70.0.9");
    state.domains[0]?.pods?.push({ name: "nocidr-0", namespace: NAMESPACE, ip: "100.70.0.10" });
    await runtime.network?.applyPeersState(state);
    const pod = await waitForPod(runtime, "nocidr-0", "failed", (p) => p.reason === "CreatePodSandboxError");
    t.match(pod.message, /spec\.domainCIDR is missing/);
    t.equal(podOf(runtime, "web-0")?.phase, "Running", "the other pod keeps running");
  });

  function inPodSafe(): string {
    try {
      return inPod("ip", "-4", "-o", "addr");
    } catch {
      return "";
    }
  }
});

t.test("without pod networking a Domain pod runs on the engine's network", async (t) => {
  const engine = await startDockerd(t);
  const runtime = await openDockerRuntime(t, engine);
  const task = dockerTask("plain", { command: ["sleep", "1000"], restartPolicy: "Always" });
  task.spec.domain = "lab";
  task.spec.domainCIDR = CIDR;
  await runtime.apply([task]);
  await waitForPod(runtime, "plain-0", "Running", (p) => p.phase === "Running");
  t.equal(runtime.network, undefined, "no network facet");
  const all = await engine.client.listContainers({ all: true, filters: { label: ["rlinf.io/pod=plain-0"] } });
  t.equal(all.length, 1, "no sidecar");
  await runtime.stop({ terminatePods: true });
});
