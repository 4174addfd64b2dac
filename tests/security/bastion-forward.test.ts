// Issue 31, item 1: a forward grant on one process-runtime pod reaches that pod's own listening
// port and nothing else on the agent's machine: not another pod's port, not the hub's HTTP, SSH
// or Domain relay port (all loopback ports of the same machine under `rlark up`). Real `ssh -W`
// and `ssh -L` through a real hub and agent; each refusal is audited as refused, never `ok`.
import t from "tap";
import {
  forwardedSocket,
  policyYaml,
  run,
  sshForward,
  startBastion,
  userYaml,
} from "../access/bastion-fixture.ts";
import { freePort } from "../helpers/free-port.ts";
import { rawTaskYaml } from "../helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

/** A Job labelled `team: <team>` whose pod answers `pod <name>` to whoever connects to `port`. */
function listeningJob(name: string, team: string, port: number): string {
  const server = `require("node:net").createServer((s) => s.end("pod ${name}\\n")).listen(${port}, "127.0.0.1")`;
  return `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: ${name}
  labels:
    team: ${team}
spec:
  tasks:
${rawTaskYaml({ kind: "Deployment", command: [process.execPath, "-e", server] })}`;
}

t.test("a forward reaches its own pod's port and no other loopback port", async (t) => {
  const visionPort = await freePort();
  const otherPort = await freePort();
  const b = await startBastion(t, {
    users: ["alice"],
    pods: ["vision-main-0", "other-main-0"],
    hub: { domainRelay: "127.0.0.1:0" },
    files: (keys) => ({
      "users.yaml": userYaml("alice", ["user"], [keys.alice as string]),
      "vision.yaml": listeningJob("vision", "vision", visionPort),
      "other.yaml": listeningJob("other", "other", otherPort),
      "policy.yaml": policyYaml(
        "alice-vision",
        "  subjects:\n    users: [alice]\n  targets:\n    jobSelector:\n      matchLabels: { team: vision }\n  verbs: [forward]\n",
      ),
    }),
  });
  const { hub } = b.running;
  const hubPorts = {
    "the hub's HTTP port": Number(new URL(hub.url).port),
    "the hub's SSH port": b.port,
    "the hub's Domain relay port": Number(hub.domainRelayAddress?.split(":")[1]),
  };
  t.ok(
    Object.values(hubPorts).every((p) => p > 0),
    "the hub listens on all three",
  );
  const ssh = (args: string[]) => run("ssh", [...b.sshArgs("alice"), ...args, "alice@127.0.0.1"]);

  // The pod's server starts after the pod is Running: wait until it answers through the forward.
  const own = await waitFor(
    "alice's forward to her own pod's port",
    async () => {
      const answer = await ssh(["-W", `vision-main-0:${visionPort}`]);
      return answer.stdout === "pod vision\n" ? answer : undefined;
    },
    onRealServers,
  );
  t.equal(own.code, 0, own.stderr);

  const refusedAt = async (port: number) =>
    waitFor(
      `the forward to port ${port} audited`,
      async () =>
        (await b.audit()).find((l) => l.verb === "forward" && l.target.endsWith(`/vision-main-0:${port}`)),
      onRealServers,
    );
  const others: Record<string, number> = { "another pod's port": otherPort, ...hubPorts };
  for (const [what, port] of Object.entries(others)) {
    await t.test(`ssh -W to ${what} is refused and audited as refused`, async (t) => {
      const answer = await ssh(["-W", `vision-main-0:${port}`]);
      t.not(answer.code, 0, "ssh fails");
      t.equal(answer.stdout, "", "not one byte from the port");
      const line = await refusedAt(port);
      t.match(line, {
        actor: "alice",
        result: "refused",
        error: new RegExp(`does not listen on port ${port}`),
      });
    });
  }

  await t.test("ssh -L to the hub's HTTP port: the connection closes without a byte", async (t) => {
    const port = hubPorts["the hub's HTTP port"];
    const local = await freePort();
    const forward = sshForward(t, b.sshArgs("alice"), `${local}:vision-main-0:${port}`);
    const socket = await forwardedSocket(local);
    let received = "";
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString();
    });
    socket.on("error", () => {});
    socket.end("GET /healthz HTTP/1.0\r\n\r\n");
    await new Promise((resolve) => socket.once("close", resolve));
    t.equal(received, "", "the hub's HTTP server never answered");
    const lines = (await b.audit()).filter((l) => l.verb === "forward" && l.target.endsWith(`:${port}`));
    t.ok(lines.length >= 2, "both attempts audited");
    t.notOk(
      lines.some((l) => l.result === "ok"),
      "none of them as ok",
    );
    forward.kill();
  });
});
