// The agent's byte hop behind the Go SSH front (ADR 0011, third decision): an `ssh -L` through
// `rlark-net ssh-front` whose bytes go from the front's TLS data port to the agent's
// `rlark-net access-hop` and on to the pod's port, with no byte on the agent's tunnel stream; the
// front's counts reach the audit; a forged or replayed ticket, or a peer without an agent's
// certificate, is refused and counted; kill -9 of the agent's hop breaks its forward on both ends
// and a restarted one carries the next; SFTP takes the hop through the agent's path filter; a grant
// removed in git cuts an open forward over the hop.
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import type { Socket } from "node:net";
import path from "node:path";
import { connect as tlsConnect } from "node:tls";
import t from "tap";
import type { AccessHop } from "../../operators/agent/access/hop.ts";
import { generateKeyPair } from "../../operators/lib/pki/index.ts";
import { freePort } from "../helpers/free-port.ts";
import { jobYaml, rawTaskYaml } from "../helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";
import {
  forwardedSocket,
  policyYaml,
  run,
  sshForward,
  sshFrontOptions,
  startBastion,
  userYaml,
} from "./bastion-fixture.ts";

const POD = "echo-main-0";
/** More than the 2 MiB SSH channel window and many TLS records. */
const BYTES = 4 * 1024 * 1024;

/** A pod echoing every byte back on `port`, ending its side after the client's EOF. */
function echoJobYaml(port: number): string {
  const script = `require("node:net").createServer((s) => { s.on("error", () => {}); s.pipe(s); }).listen(${port}, "127.0.0.1");`;
  return jobYaml("echo", [rawTaskYaml({ kind: "Deployment", command: [process.execPath, "-e", script] })]);
}

/** Sends `data` through `socket`, half-closes, and resolves with everything that came back. */
function echo(socket: Socket, data: Buffer): Promise<Buffer> {
  const chunks: Buffer[] = [];
  socket.on("data", (c: Buffer) => chunks.push(c));
  const done = new Promise<Buffer>((resolve, reject) => {
    socket.once("close", () => resolve(Buffer.concat(chunks)));
    socket.once("error", reject);
  });
  socket.end(data);
  return done;
}

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/** A TLS connection to the hop's data port; resolves with what the port answered before closing. */
function presentTicket(port: number, ticket: string, identity?: { cert: string; key: string; ca: string }) {
  return new Promise<string>((resolve) => {
    const s = tlsConnect({
      host: "127.0.0.1",
      port,
      rejectUnauthorized: false,
      ...(identity ? { cert: identity.cert, key: identity.key } : {}),
    });
    let answer = "";
    s.on("secureConnect", () => s.write(`${ticket}\n`));
    s.on("data", (c: Buffer) => {
      answer += c.toString();
    });
    s.on("error", () => {});
    s.on("close", () => resolve(answer));
  });
}

t.test("ssh -L through the front over the agent's Go hop", async (t) => {
  const port = await freePort();
  const rlarkNet = sshFrontOptions(true).rlarkNet as string;
  const b = await startBastion(t, {
    users: ["alice"],
    pods: [POD],
    hub: { sshFront: "127.0.0.1:0", rlarkNet, sshFrontHop: "127.0.0.1:0" },
    accessHop: rlarkNet,
    files: (keys) => ({
      "users.yaml": userYaml("alice", ["user"], [keys.alice as string]),
      "echo.yaml": echoJobYaml(port),
      "policy.yaml": policyYaml(
        "alice-forward",
        "  subjects: { users: [alice] }\n  verbs: [forward, files]\n",
      ),
    }),
  });
  const front = b.running.hub.sshFront?.process;
  const hop = b.agent.accessHop as AccessHop;
  t.ok(front?.hopPort, "the front listens on a TLS data port for agents");
  t.ok(hop?.pid, "the agent runs rlark-net access-hop");
  if (!front?.hopPort || !hop) return;
  const stats = front.hopStats;
  // The tickets the hub gave the agent (to replay one below).
  const tickets: string[] = [];
  const dial = hop.dial.bind(hop);
  hop.dial = (request) => {
    tickets.push(request.ticket);
    return dial(request);
  };

  const localPort = await freePort();
  sshForward(t, b.sshArgs("alice"), `${localPort}:${POD}:${port}`);

  await t.test("bytes go end to end through Go at both hops, none through Node", async (t) => {
    const data = randomBytes(BYTES);
    const back = await echo(await forwardedSocket(localPort), data);
    t.equal(back.length, BYTES, "every byte came back");
    t.equal(sha(back), sha(data), "unchanged");
    t.equal(stats.joined, 1, "the forward was joined over the hop");
    t.equal(stats.streamBytes, 0, "the agent's tunnel stream carried no byte of it");
    await waitFor(
      "the front's counts in the audit",
      async () =>
        (await b.audit()).find((l) => l.verb === "forward" && l.result === "ok" && l.bytesIn === BYTES),
      onRealServers,
    );
    const line = (await b.audit()).find((l) => l.verb === "forward" && l.result === "ok");
    t.equal(line?.bytesIn, BYTES, "audited bytes from the user: the front's count");
    t.equal(line?.bytesOut, BYTES, "audited bytes to the user");
    t.equal(stats.bytesIn, BYTES, "Go's reported bytes, in");
    t.equal(stats.bytesOut, BYTES, "and out");
  });

  await t.test(
    "forged and replayed tickets, and peers without an agent's certificate, are refused",
    async (t) => {
      const creds = b.agent.tunnel.credentials;
      const identity = { cert: creds.certPem, key: creds.privateKeyPem, ca: creds.caCertPem };
      const before = stats.refused;
      t.equal(
        await presentTicket(front.hopPort as number, randomBytes(16).toString("hex"), identity),
        "",
        "a forged ticket gets nothing",
      );
      await waitFor("the forged ticket counted", () => stats.refused === before + 1, onRealServers);
      t.equal(stats.lastRefusal, "unknown or used ticket");
      const used = tickets[0] as string;
      t.ok(used, "the hub's ticket for the forward above");
      t.equal(
        await presentTicket(front.hopPort as number, used, identity),
        "",
        "a replayed ticket gets nothing",
      );
      await waitFor("the replay counted", () => stats.refused === before + 2, onRealServers);
      t.equal(stats.lastRefusal, "unknown or used ticket");
      t.equal(
        await presentTicket(front.hopPort as number, used),
        "",
        "without a client certificate: nothing",
      );
      await waitFor("the bare TLS peer counted", () => stats.refused === before + 3, onRealServers);
      t.equal(stats.lastRefusal, "TLS handshake failed");
    },
  );

  await t.test(
    "a ticket is its cluster's and single use: a foreign agent's use of it burns it",
    async (t) => {
      // Another cluster's agent certificate, from the same CA.
      const foreign = generateKeyPair();
      const cert = b.running.hub.pki.ca.issue({
        role: "agent",
        name: "elsewhere",
        publicKey: foreign.privateKeyPem,
        ttlMs: 60_000,
      }).certPem;
      const before = stats.refused;
      const joined = stats.joined;
      // The next forward's ticket, presented first by the foreign agent, then by this cluster's.
      hop.dial = async (request) => {
        hop.dial = dial;
        const answer = await presentTicket(front.hopPort as number, request.ticket, {
          cert,
          key: foreign.privateKeyPem,
          ca: "",
        });
        t.equal(answer, "", "the foreign agent is refused");
        return dial(request);
      };
      const socket = await forwardedSocket(localPort);
      socket.on("error", () => {});
      socket.on("data", () => {});
      await new Promise((resolve) => socket.once("close", resolve));
      t.pass("the forward is refused: its ticket was burnt");
      await waitFor("both refusals counted", () => stats.refused === before + 2, onRealServers);
      t.equal(stats.joined, joined, "nothing was joined");
    },
  );

  await t.test(
    "kill -9 of the agent's hop breaks its forward on both ends; a restarted one serves",
    async (t) => {
      const socket = await forwardedSocket(localPort);
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      socket.on("error", () => {});
      socket.on("data", () => {});
      socket.write("ping");
      await waitFor("the forward joined", () => hop.open === 1 && stats.joined === 2, onRealServers);
      const pid = hop.pid as number;
      process.kill(pid, "SIGKILL");
      await closed;
      t.pass("the user's forwarded connection ended");
      await waitFor("the hub ended that access", () => b.running.hub.bastion.open === 0, onRealServers);
      await waitFor(
        "a new access hop",
        () => hop.pid !== undefined && hop.pid !== pid && hop.restarts === 1,
        onRealServers,
      );
      const data = randomBytes(64 * 1024);
      const back = await waitFor(
        "a forward over the restarted hop",
        async () => {
          const got = await echo(await forwardedSocket(localPort), data);
          return got.length === data.length ? got : undefined;
        },
        onRealServers,
      );
      t.equal(sha(back), sha(data), "carried intact");
      t.equal(stats.joined, 3, "over the hop again");
      t.equal(stats.streamBytes, 0, "still no byte on the tunnel stream");
    },
  );

  await t.test("SFTP over the hop: the agent's path filter still between it and sftp-server", async (t) => {
    const podDir = path.join(b.dir, "state", "work", "agent-local_echo-main");
    const local = path.join(b.dir, "sftp-local");
    mkdirSync(local);
    const down = randomBytes(BYTES);
    const up = randomBytes(BYTES / 2);
    writeFileSync(path.join(podDir, "down.bin"), down);
    writeFileSync(path.join(local, "up.bin"), up);
    const joined = stats.joined;
    const args = b.sshArgs("alice").map((a) => (a === "-p" ? "-P" : a));
    const result = await run(
      "sftp",
      [...args, "-b", "-", `alice+${POD}@127.0.0.1`],
      "get down.bin\nput up.bin\nget /etc/hostname\n",
      { cwd: local },
    );
    t.not(result.code, 0, "the batch fails at the path outside the pod's directory");
    t.match(result.stderr, /hostname/, "which the filter refused");
    t.equal(sha(readFileSync(path.join(local, "down.bin"))), sha(down), "downloaded intact");
    t.equal(sha(readFileSync(path.join(podDir, "up.bin"))), sha(up), "uploaded intact");
    t.equal(stats.joined, joined + 1, "the session was joined over the hop");
    t.equal(stats.streamBytes, 0, "no byte on the agent's tunnel stream");
    await waitFor(
      "the session's audit line with the front's counts",
      async () =>
        (await b.audit()).find((l) => l.verb === "files" && l.bytesOut > BYTES && l.bytesIn > BYTES / 2),
      onRealServers,
    );
  });

  await t.test("a grant removed in git cuts an open forward over the hop", async (t) => {
    const socket = await forwardedSocket(localPort);
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.on("error", () => {});
    socket.on("data", () => {});
    socket.write("ping");
    await waitFor("the forward open over the hop", () => hop.open === 1, onRealServers);
    await b.commit({
      "policy.yaml": policyYaml("alice-forward", "  subjects: { users: [alice] }\n  verbs: [files]\n"),
    });
    await closed;
    t.pass("the user's forwarded connection was cut");
    await waitFor("the hop's pair closed", () => hop.open === 0, onRealServers);
    await waitFor(
      "the revocation audited",
      async () => (await b.audit()).find((l) => l.verb === "forward" && l.result === "revoked"),
      onRealServers,
    );
  });
});
