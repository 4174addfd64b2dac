// SFTP and `ssh -L` through hub and agent over the agent data link (docs/tunnel.md), with the real
// OpenSSH clients: the bytes take the data link, the audit still counts them, a removed grant
// still cuts an open forward, and when the data link cannot be used (turned off, or its dial
// fails) the same streams stay on the agent's SSH tunnel.
import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import path from "node:path";
import t, { type Test } from "tap";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";
import { type Bastion, podJobYaml, policyYaml, run, startBastion, userYaml } from "./bastion-fixture.ts";

const POD = "vision-main-0";
const FILE_BYTES = 8 * 1024 * 1024;

const files = (keys: Record<string, string>) => ({
  "users.yaml": userYaml("alice", ["user"], [keys.alice as string]),
  "job.yaml": podJobYaml("vision"),
  "policy.yaml": policyYaml("alice-files", "  subjects:\n    users: [alice]\n  verbs: [files, forward]\n"),
});

const digest = (data: Buffer) => createHash("sha256").update(data).digest("hex");

/** Puts a random file in the pod's directory, downloads it with sftp, and compares. */
async function download(t: Test, b: Bastion): Promise<void> {
  const podDir = path.join(b.dir, "state", "work", "agent-local_vision-main");
  const local = path.join(b.dir, `local-${randomBytes(4).toString("hex")}`);
  mkdirSync(local);
  const data = randomBytes(FILE_BYTES);
  writeFileSync(path.join(podDir, "big.bin"), data);
  const batch = path.join(local, "batch");
  writeFileSync(batch, "get big.bin\n");
  const args = b.sshArgs("alice").map((a) => (a === "-p" ? "-P" : a));
  const result = await run("sftp", [...args, "-b", batch, `alice+${POD}@127.0.0.1`], "", { cwd: local });
  t.equal(result.code, 0, result.stderr);
  t.equal(digest(readFileSync(path.join(local, "big.bin"))), digest(data), "the download is intact");
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** `ssh -N -L` from a free local port to the pod's `podPort`; resolves once a connection goes through. */
async function forward(t: Test, b: Bastion, podPort: number): Promise<{ ssh: ChildProcess; socket: Socket }> {
  const localPort = await freePort();
  const ssh = spawn(
    "ssh",
    [
      ...b.sshArgs("alice"),
      "-N",
      "-o",
      "ExitOnForwardFailure=yes",
      "-L",
      `${localPort}:${POD}:${podPort}`,
      "alice@127.0.0.1",
    ],
    { stdio: "ignore" },
  );
  t.teardown(() => ssh.kill());
  const socket = await waitFor(
    "the forward carries a greeting",
    () =>
      new Promise<Socket | undefined>((resolve) => {
        const s = connect({ host: "127.0.0.1", port: localPort });
        s.once("error", () => resolve(undefined));
        s.once("data", (d: Buffer) => resolve(d.toString() === "hello\n" ? s : undefined));
        s.once("close", () => resolve(undefined));
      }),
    onRealServers,
  );
  t.teardown(() => socket.destroy());
  return { ssh, socket };
}

/** A pod port (process runtime: a loopback port) that greets, then echoes. */
async function echoPort(t: Test): Promise<number> {
  const server = createServer((s) => {
    s.on("error", () => {});
    s.write("hello\n");
    s.pipe(s);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

t.test("with the data link", async (t) => {
  const b = await startBastion(t, { users: ["alice"], pods: [POD], files });
  const link = b.running.hub.tunnel.dataLink;
  if (!link) throw new Error("the hub's data link is not listening");

  await t.test("an SFTP download takes the data link and arrives intact", async (t) => {
    const before = link.stats().claimed;
    await download(t, b);
    t.ok(link.stats().claimed > before, "a data connection was claimed");
    await waitFor("the transfer audited with its bytes", async () =>
      (await b.audit()).some((l) => l.verb === "files" && (l.bytesOut ?? 0) >= FILE_BYTES),
    );
  });

  await t.test("ssh -L takes the data link; a removed grant cuts the open forward", async (t) => {
    const podPort = await echoPort(t);
    const before = link.stats().claimed;
    const { socket } = await forward(t, b, podPort);
    t.ok(link.stats().claimed > before, "a data connection was claimed");
    socket.write("ping\n");
    await new Promise<void>((resolve) => socket.once("data", () => resolve()));
    const cut = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    await b.commit({
      "policy.yaml": policyYaml("alice-files", "  subjects:\n    users: [alice]\n  verbs: [files]\n"),
    });
    await cut;
    t.pass("the forward ended with its grant");
    await b.commit({ "policy.yaml": files({ alice: "" })["policy.yaml"] });
  });

  await t.test("a data link that cannot be dialled leaves the stream on the SSH tunnel", async (t) => {
    // The endpoint goes away while the hub still offers it: every dial is refused.
    await link.close();
    const claimed = link.stats().claimed;
    await download(t, b);
    t.equal(link.stats().claimed, claimed, "no data connection");
    t.equal(link.stats().pendingTickets, 0, "the unused ticket was withdrawn");
  });
});

t.test("with the data link turned off, SFTP and ssh -L stay on the SSH tunnel", async (t) => {
  const b = await startBastion(t, { users: ["alice"], pods: [POD], files, hub: { agentDataPort: false } });
  t.equal(b.running.hub.tunnel.dataLink, undefined);
  await download(t, b);
  const podPort = await echoPort(t);
  const { socket } = await forward(t, b, podPort);
  socket.write("ping\n");
  const echoed = await new Promise<string>((resolve) =>
    socket.once("data", (d: Buffer) => resolve(d.toString())),
  );
  t.equal(echoed, "ping\n");
});
