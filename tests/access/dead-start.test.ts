// Sessions whose program cannot start end at once with the reason, through the real OpenSSH
// clients (and the web terminal's WebSocket) against a real hub and a process-runtime agent:
// an sftp-server that exits at once, a command not found, no Python for the pty helper, a
// forward to a port nobody listens on. execFile's timeout is only the guard against a hang: a
// client it had to kill fails the test by its signal.
import { execFile } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import WebSocket from "ws";
import { TERMINAL_PROTOCOL } from "../../operators/access/index.ts";
import { hashPassword } from "../../operators/dashboard/index.ts";
import { FAST, login } from "../dashboard/dashboard-hub.ts";
import { freePort } from "../helpers/free-port.ts";
import { podJobYaml, policyYaml, startBastion, userYaml } from "./bastion-fixture.ts";

const POD = "vision-main-0";
/** Far beyond any clean end here; only a hang reaches it. */
const GUARD_MS = 60_000;

interface Ended {
  code: number | null;
  signal: string | null;
  stderr: string;
}

function client(program: string, args: string[]): Promise<Ended> {
  return new Promise((resolve) => {
    const child = execFile(
      program,
      args,
      { timeout: GUARD_MS, killSignal: "SIGKILL", maxBuffer: 1024 * 1024 },
      (error, _stdout, stderr) => {
        const failed = error as (Error & { code?: unknown; signal?: string | null }) | null;
        resolve({
          code: failed ? (typeof failed.code === "number" ? failed.code : null) : 0,
          signal: failed?.signal ?? null,
          stderr,
        });
      },
    );
    child.stdin?.end();
  });
}

t.test("a session whose program cannot start ends with its reason", async (t) => {
  const tools = mkdtempSync(path.join(tmpdir(), "rlark-dead-start-"));
  t.teardown(() => rmSync(tools, { recursive: true, force: true }));
  const deadSftp = path.join(tools, "sftp-server");
  // More than the 2 KiB the agent keeps, so the bound shows.
  writeFileSync(
    deadSftp,
    `#!/bin/sh\necho "No user found for uid 1338" >&2\nhead -c 8000 /dev/zero | tr '\\0' x >&2\nexit 1\n`,
  );
  chmodSync(deadSftp, 0o755);
  const password = await hashPassword("alice pw", FAST);
  const b = await startBastion(t, {
    users: ["alice"],
    pods: [POD],
    hub: { dashboard: true },
    access: { sftpServer: deadSftp, python: path.join(tools, "no-python3") },
    files: (keys) => ({
      "users.yaml": `${userYaml("alice", ["user"], [keys.alice as string])}  passwordHash: "${password}"\n`,
      "job.yaml": podJobYaml("vision"),
      "policy.yaml": policyYaml(
        "alice-all",
        '  subjects:\n    users: [alice]\n  verbs: [shell, exec, files, forward]\n  commands: ["no-such-command-here *"]\n',
      ),
    }),
  });
  const host = `alice+${POD}@127.0.0.1`;

  await t.test("sftp: the sftp-server's own words on stderr, a non-zero status", async (t) => {
    const args = b.sshArgs("alice").map((a) => (a === "-p" ? "-P" : a));
    const batch = path.join(tools, "batch");
    writeFileSync(batch, "ls\n");
    const ended = await client("sftp", [...args, "-b", batch, host]);
    t.equal(ended.signal, null, "sftp ended by itself");
    t.not(ended.code, 0, ended.stderr);
    t.match(
      ended.stderr,
      /sftp-server could not start \(exit status 1\): No user found for uid 1338; x{100,}/,
    );
    t.ok(ended.stderr.length < 4096, `its stderr is bounded (${ended.stderr.length} characters)`);
  });

  await t.test("exec of a command not found: status 127 and the reason", async (t) => {
    const ended = await client("ssh", [...b.sshArgs("alice"), "-T", host, "no-such-command-here --now"]);
    t.equal(ended.signal, null, "ssh ended by itself");
    t.equal(ended.code, 127, ended.stderr);
    t.match(ended.stderr, /no-such-command-here/);
  });

  await t.test("a terminal without Python for the pty helper: status 127 and the reason", async (t) => {
    const ended = await client("ssh", [...b.sshArgs("alice"), "-tt", host]);
    t.equal(ended.signal, null, "ssh ended by itself");
    t.equal(ended.code, 127, ended.stderr);
    t.match(ended.stderr, /rlark: could not start a terminal for .*no-python3 ENOENT/);
  });

  await t.test("a pty helper that fails: its own words reach the user", async (t) => {
    const python = path.join(tools, "no-python3");
    writeFileSync(python, "#!/bin/sh\necho 'this Python cannot run the helper' >&2\nexit 1\n");
    chmodSync(python, 0o755);
    t.teardown(() => rmSync(python));
    const ended = await client("ssh", [...b.sshArgs("alice"), "-tt", host]);
    t.equal(ended.signal, null, "ssh ended by itself");
    t.equal(ended.code, 1, ended.stderr);
    t.match(ended.stderr, /this Python cannot run the helper/);
  });

  await t.test("a forward to a port the pod does not listen on: refused, the reason audited", async (t) => {
    const port = await freePort();
    const ended = await client("ssh", [...b.sshArgs("alice"), "-W", `${POD}:${port}`, "alice@127.0.0.1"]);
    t.equal(ended.signal, null, "ssh ended by itself");
    t.not(ended.code, 0, ended.stderr);
    // SSH's open failure carries a reason code (connect failed), not the text: that is audited.
    t.equal(ended.code, 255);
    t.match(ended.stderr, /stdio forwarding failed/);
    const audit = await b.audit();
    t.match(
      audit.find((line) => line.verb === "forward" && line.target.endsWith(`:${port}`)),
      { result: "refused", error: new RegExp(`does not listen on port ${port}`) },
    );
  });

  await t.test("the web terminal without Python: exit 127 and the reason shown", async (t) => {
    const { hub } = b.running;
    const token = (await login(hub, { username: "alice", password: "alice pw" })).body.token as string;
    const url = `${hub.url.replace(/^http/, "ws")}/api/v1/namespaces/agent-local/pods/${POD}/terminal`;
    const seen = await new Promise<{ output: string; messages: string[]; close: number }>((resolve) => {
      const ws = new WebSocket(url, [TERMINAL_PROTOCOL], { headers: { authorization: `Bearer ${token}` } });
      let output = "";
      const messages: string[] = [];
      const guard = setTimeout(() => ws.terminate(), GUARD_MS);
      ws.on("message", (data: Buffer, binary: boolean) => {
        if (binary) output += data.toString();
        else messages.push(data.toString());
      });
      ws.on("close", (close) => {
        clearTimeout(guard);
        resolve({ output, messages, close });
      });
      ws.on("error", () => {});
    });
    t.equal(seen.close, 1000, "closed by the hub, not by the guard");
    t.match(seen.output, /no-python3/);
    t.same(
      seen.messages.map((m) => JSON.parse(m)),
      [{ type: "exit", code: 127 }],
    );
  });
});
