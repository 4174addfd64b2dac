// Capability states of the embodied runtime end to end: `rlark device-plugin` writes its state to
// the capability directory, a real `rlark agent` process reads it and reports it over its tunnel,
// the hub's Cluster status shows it. A kubelet-side Registration server (from the vendored proto)
// stands in for kubelet.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t, { type Test } from "tap";
import type { Hub } from "../../../operators/hub/hub.ts";
import type { Capability } from "../../../operators/lib/tunnel/index.ts";
import { startKubeletRegistration } from "../../device/kubelet-side.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const cli = path.resolve(import.meta.dirname, "../../../operators/cli/main.ts");
const cluster =
  "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: robot\nspec:\n  runtime: process\n";
const slow = { ...onRealServers, attempts: 1200 };

function start(t: Test, args: string[]): ChildProcess {
  const child = spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "ignore", "pipe"] });
  child.stderr?.resume();
  t.teardown(() => {
    child.kill("SIGKILL");
  });
  return child;
}

async function capability(hub: Hub, name: string): Promise<Capability | undefined> {
  const status = (await hub.store.get("Cluster", undefined, "robot"))?.status as
    | { capabilities?: Capability[] }
    | undefined;
  return status?.capabilities?.find((c) => c.name === name);
}

t.test(
  "the device plugin's state reaches the hub through a real agent; a dead component shows UNKNOWN",
  async (t) => {
    const { hub } = await startHubOnGit(t, { files: { "cluster.yaml": cluster } });
    await waitFor(
      "cluster from git",
      async () => (await hub.store.get("Cluster", undefined, "robot")) !== undefined,
      slow,
    );
    const root = mkdtempSync(path.join(tmpdir(), "rlark-devcap-"));
    t.teardown(() => rmSync(root, { recursive: true, force: true }));
    const dir = (name: string) => {
      const d = path.join(root, name);
      mkdirSync(d);
      return d;
    };
    const [pluginDir, devDir, capabilityDir, stateDir] = ["plugins", "dev", "caps", "agent"].map(
      dir,
    ) as string[];
    writeFileSync(path.join(devDir as string, "video0"), "");

    const { token } = await hub.pki.enrollment.createToken({ cluster: "robot", ttlMs: 60_000 });
    start(t, [
      "agent",
      "--hub",
      hub.sshAddress,
      "--state-dir",
      stateDir as string,
      "--token",
      token,
      "--ca-hash",
      hub.caFingerprint,
      "--capability-dir",
      capabilityDir as string,
    ]);
    await waitFor("the agent's runtime capability", () => capability(hub, "runtime/process"), slow);
    t.equal(
      await capability(hub, "device-plugin"),
      undefined,
      "no component has reported: none listed, nothing FAILED",
    );

    const plugin = start(t, [
      "device-plugin",
      "--plugin-dir",
      pluginDir as string,
      "--dev-dir",
      devDir as string,
      "--robot-config",
      path.join(root, "robots.yaml"),
      "--socket-dir",
      path.join(root, "sockets"),
      "--cli-dir",
      path.join(root, "bin"),
      "--capability-dir",
      capabilityDir as string,
    ]);
    const waiting = await waitFor(
      "device-plugin STARTING (no kubelet yet)",
      async () => {
        const c = await capability(hub, "device-plugin");
        return c?.health === "STARTING" && c;
      },
      slow,
    );
    t.match(waiting, { process: "RUNNING", message: /waiting for .*kubelet.sock; 1\/1 devices healthy/ });

    const kubelet = await startKubeletRegistration(pluginDir as string);
    t.teardown(() => kubelet.stop());
    await waitFor(
      "device-plugin READY",
      async () => (await capability(hub, "device-plugin"))?.health === "READY",
      slow,
    );
    t.equal(kubelet.registrations.length, 1);

    plugin.kill("SIGTERM");
    const stopped = await waitFor(
      "device-plugin STOPPED",
      async () => {
        const c = await capability(hub, "device-plugin");
        return c?.process === "STOPPED" && c;
      },
      slow,
    );
    t.match(stopped, { health: "STOPPED" });

    // A component killed without a word leaves its last state behind; once stale it is UNKNOWN.
    writeFileSync(
      path.join(capabilityDir as string, "ros-controller.json"),
      JSON.stringify({
        name: "ros-controller",
        process: "RUNNING",
        health: "READY",
        updatedAt: Date.now() - 3_600_000,
      }),
    );
    const stale = await waitFor(
      "ros-controller UNKNOWN",
      async () => {
        const c = await capability(hub, "ros-controller");
        return c?.health === "UNKNOWN" && c;
      },
      slow,
    );
    t.match(stale.message, /no report for 36\d\ds \(last: RUNNING\/READY\)/);
  },
);
