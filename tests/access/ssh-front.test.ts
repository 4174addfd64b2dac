// The bastion's Go SSH front (rlark-net ssh-front, ADR 0011) as a process: the hub runs it with
// its sockets private, asks nothing of it but bytes (a key not listed is refused, a shell is not
// served here), restarts it after kill -9 (an open SFTP session ends, new ones work), bounds what
// idle connections cost it, and passes its JSON log lines through the hub's logger. The SFTP and
// forward behaviour through it is bastion-files.test.ts, run with RLARK_TEST_SSH_FRONT=go.
import { spawn } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { connect, type Socket } from "node:net";
import path from "node:path";
import t from "tap";
import type { Logger } from "../../operators/lib/logger.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";
import {
  keygen,
  openSshArgs,
  podJobYaml,
  policyYaml,
  run,
  sshFrontOptions,
  startBastion,
  userYaml,
} from "./bastion-fixture.ts";

const POD = "vision-main-0";
/** Idle TCP connections opened at the front for the memory bound. */
const IDLE = 1000;
/** What the front may hold in resident memory with them (Go's runtime alone is ~10 MiB). */
const IDLE_RSS_BYTES = 96 * 1024 * 1024;
/** Longest an `ls` over SFTP may take before it counts as hung (not a performance bound). */
const SFTP_TIMEOUT_MS = 120_000;

interface Line {
  level: string;
  message: string;
  fields: Record<string, unknown>;
}

function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"));
  return Number(line?.split(/\s+/)[1] ?? 0) * 1024;
}

t.test(
  "the Go SSH front: private sockets, decisions in the hub, kill -9, idle connections, logs",
  async (t) => {
    const lines: Line[] = [];
    const record =
      (level: string) =>
      (message: string, fields: Record<string, unknown> = {}) => {
        if (lines.length < 10_000) lines.push({ level, message, fields });
      };
    const logger: Logger = { info: record("info"), warn: record("warn"), error: record("error") };
    const front = sshFrontOptions(true);
    const b = await startBastion(t, {
      users: ["alice"],
      pods: [POD],
      hub: { ...front, logger },
      files: (keys) => ({
        "users.yaml": userYaml("alice", ["user"], [keys.alice as string]),
        "job.yaml": podJobYaml("vision"),
        "policy.yaml": policyYaml(
          "alice-files",
          "  subjects: { users: [alice] }\n  targets: { clusters: [local] }\n  verbs: [files, shell]\n",
        ),
      }),
    });
    const hub = b.running.hub;
    const pid = hub.sshFront?.process.pid as number;
    t.ok(pid, "the hub runs rlark-net ssh-front");
    t.equal(
      readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[1],
      "ssh-front",
      "as rlark-net's ssh-front",
    );
    const dir = path.join(b.running.dataDir, "ssh-front");
    for (const name of ["control.sock", "data.sock"])
      t.equal(statSync(path.join(dir, name)).mode & 0o777, 0o600, `${name} is 0600`);
    t.equal(statSync(dir).mode & 0o777, 0o700, "in a 0700 folder");

    // Bounded: a session that hangs fails (killed, code null) instead of holding the test.
    const sftp = (user = "alice", args = b.sshArgs(user)) =>
      run(
        "sftp",
        [...args.map((a) => (a === "-p" ? "-P" : a)), "-b", "-", `${user}+${POD}@127.0.0.1`],
        "ls\n",
        { timeout: SFTP_TIMEOUT_MS },
      );
    const listed = await sftp();
    t.equal(listed.code, 0, `sftp through the front: ${listed.stderr}`);
    t.match(listed.stdout, /marker\.txt/, "lists the pod's directory");

    const stranger = keygen(b.dir, "stranger");
    const refused = await run("sftp", [
      ...openSshArgs(b.knownHosts, stranger.file, b.port).map((a) => (a === "-p" ? "-P" : a)),
      "-b",
      "-",
      `alice+${POD}@127.0.0.1`,
    ]);
    t.not(refused.code, 0, "a key alice does not list is refused");
    t.match(refused.stderr, /Permission denied/, "at authentication");

    const shell = await run("ssh", [...b.sshArgs("alice"), `alice+${POD}@127.0.0.1`, "true"]);
    t.equal(shell.code, 1, "a command is not served on the front's port");
    t.match(shell.stderr, /shells and commands are on the hub's SSH port/, "and it says where they are");

    // kill -9 with an SFTP session open: it ends; a new process takes the port; new sessions work.
    const open = spawn(
      "sftp",
      [...b.sshArgs("alice").map((a) => (a === "-p" ? "-P" : a)), "-b", "-", `alice+${POD}@127.0.0.1`],
      { stdio: ["pipe", "ignore", "ignore"] },
    );
    t.teardown(() => open.kill());
    // The line below races sftp's exit: its stdin may already be closed (EPIPE), which is fine.
    open.stdin?.on("error", () => {});
    await waitFor("the open SFTP session admitted", () => hub.bastion.open === 1, onRealServers);
    t.equal(open.exitCode, null, "the SFTP session is open before the kill");
    const exited = new Promise((resolve) => open.once("exit", resolve));
    process.kill(pid, "SIGKILL");
    // sftp in batch mode reads its next command before it looks at the connection again.
    open.stdin?.end("pwd\n");
    await exited;
    t.pass("the open SFTP session's client ended with the process");
    await waitFor("the hub ended the access", () => hub.bastion.open === 0, onRealServers);
    t.pass("and the hub ended (and audited) that access");
    await waitFor(
      "a new rlark-net ssh-front",
      () => {
        const now = hub.sshFront?.process;
        return now?.pid !== undefined && now.pid !== pid && now.restarts === 1;
      },
      onRealServers,
    );
    await waitFor(
      "a new SFTP session through the restarted front",
      async () => (await sftp()).code === 0,
      onRealServers,
    );
    t.pass("new sessions work after the restart");
    t.ok(
      lines.some(
        (l) =>
          l.level === "warn" &&
          l.message === "ssh front: rlark-net ssh-front exited, restarting" &&
          l.fields.signal === "SIGKILL",
      ),
      "the hub logged the kill and the restart",
    );
    t.ok(
      lines.filter(
        (l) => l.message === "ssh front: rlark-net: listening" && typeof l.fields.address === "string",
      ).length >= 2,
      "each front's own JSON log line came through the hub's logger, its fields intact",
    );

    // Idle connections (never a byte sent) cost the front little, and it still serves.
    const now = hub.sshFront?.process.pid as number;
    const sockets: Socket[] = [];
    t.teardown(() => {
      for (const s of sockets) s.destroy();
    });
    for (let i = 0; i < IDLE; i++) {
      sockets.push(
        await new Promise<Socket>((resolve, reject) => {
          const s = connect(b.port, "127.0.0.1");
          s.once("connect", () => resolve(s));
          s.once("error", reject);
        }),
      );
      sockets.at(-1)?.on("error", () => {});
    }
    const rss = rssBytes(now);
    t.ok(rss < IDLE_RSS_BYTES, `${IDLE} idle connections: ${(rss / 2 ** 20).toFixed(1)} MiB resident`);
    const during = await sftp();
    t.equal(during.code, 0, `an SFTP session beside them works: ${during.stderr}`);
  },
);
