// Issue 31, item 5: what ends a grant ends the sessions it let in, judged on what git holds now.
// A Job relabelled so that its AccessPolicy's jobSelector no longer matches ends the open
// session into its pod (the target's current labels, not those at login); an SSH key removed
// from a User ends the sessions opened with that key (the user's other key keeps its own), and
// the connection it logged in cannot open another. Real OpenSSH sessions through a real hub.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import t, { type Test } from "tap";
import {
  type Bastion,
  keygen,
  podJobYaml,
  policyYaml,
  run,
  startAliceBastion,
  userYaml,
} from "../access/bastion-fixture.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const POD = "vision-main-0";

interface Session {
  child: ChildProcess;
  stderr(): string;
  /** Waits (bounded) until ssh has ended; its exit code. */
  exited(): Promise<number | null>;
}

/** `ssh -T <login> sleep 3600` with `key`, left running. */
function session(t: Test, b: Bastion, key: string, login: string): Session {
  const args = b.sshArgs("alice").map((a, i, all) => (all[i - 1] === "-i" ? key : a));
  const child = spawn("ssh", [...args, "-T", `${login}@127.0.0.1`, "sleep 3600"], {
    stdio: ["pipe", "ignore", "pipe"],
  });
  t.teardown(() => child.kill("SIGKILL"));
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  // "close", not "exit": what ssh printed last may still be in the pipe when it exits
  let closed: { code: number | null } | undefined;
  child.once("close", (code) => {
    closed = { code };
  });
  return {
    child,
    stderr: () => stderr,
    exited: async () => (await waitFor(`ssh to ${login} ended`, () => closed, onRealServers)).code,
  };
}

const grant = policyYaml(
  "vision-team",
  '  subjects:\n    users: [alice]\n  targets:\n    jobSelector:\n      matchLabels: { team: vision }\n  verbs: [exec]\n  commands: ["sleep *", "true"]\n',
);

t.test("a session ends when git stops granting it, by the target's and the user's state now", async (t) => {
  const b = await startAliceBastion(t, grant);
  const second = keygen(b.dir, "alice-second");
  // The fixture's key, as its public line (ssh-keygen wrote it beside the private key).
  const first = { file: b.keys.alice as string, line: readFileSync(`${b.keys.alice}.pub`, "utf8").trim() };
  const { hub } = b.running;
  const opened = (n: number) => waitFor(`${n} sessions open`, () => hub.bastion.open === n, onRealServers);
  // Each part counts from the sessions open before it (an earlier part may have failed with one).
  let before = 0;
  t.beforeEach(() => {
    before = hub.bastion.open;
  });

  await t.test("a Job label change that makes the policy stop matching ends the open session", async (t) => {
    const open = session(t, b, first.file, `alice+${POD}`);
    await opened(before + 1);
    await b.commit({ "job.yaml": podJobYaml("vision", "    team: other\n") });
    t.equal(await open.exited(), 255, "ssh reports the session cut");
    t.match(open.stderr(), /access revoked: no AccessPolicy grants alice exec/);
    const revoked = (await b.audit()).find((l) => l.actor === "alice" && l.result === "revoked");
    t.ok(revoked, "the revocation is audited");
    const again = await run("ssh", [...b.sshArgs("alice"), "-T", `alice+${POD}@127.0.0.1`, "true"]);
    t.not(again.code, 0, "and a new session is refused");
    await b.commit({ "job.yaml": podJobYaml("vision") });
  });

  await t.test(
    "removing an SSH key ends the sessions opened with it, not those of the user's other key",
    async (t) => {
      await b.commit({ "users.yaml": userYaml("alice", ["user"], [first.line, second.line]) });
      const withFirst = session(t, b, first.file, `alice+${POD}`);
      const withSecond = session(t, b, second.file, `alice+${POD}`);
      await opened(before + 2);
      // A connection logged in with the first key, kept open by OpenSSH's multiplexing master.
      const control = path.join(b.dir, "control");
      const keyArgs = b.sshArgs("alice").map((a, i, all) => (all[i - 1] === "-i" ? first.file : a));
      const master = spawn("ssh", [...keyArgs, "-M", "-S", control, "-N", `alice+${POD}@127.0.0.1`], {
        stdio: "ignore",
      });
      t.teardown(() => master.kill("SIGKILL"));
      const mux = (command: string) =>
        run("ssh", [...keyArgs, "-S", control, "-T", `alice+${POD}@127.0.0.1`, command]);
      await waitFor("the master connection up", async () => (await mux("true")).code === 0, onRealServers);
      await b.commit({ "users.yaml": userYaml("alice", ["user"], [second.line]) });
      t.equal(await withFirst.exited(), 255, "the first key's session is cut");
      t.match(withFirst.stderr(), /access revoked: .*key/);
      t.equal(hub.bastion.open, before + 1, "the second key's session goes on");
      t.equal(withSecond.child.exitCode, null, "its ssh still runs");
      const reused = await mux("true");
      t.not(reused.code, 0, "the connection the removed key logged in opens no new session");
      t.match(reused.stderr, /key/);
      const refused = await run("ssh", [...b.sshArgs("alice"), "-T", `alice+${POD}@127.0.0.1`, "true"]);
      t.not(refused.code, 0, "the removed key no longer logs in");
    },
  );
});
