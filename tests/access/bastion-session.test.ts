// Interactive SSH sessions through the bastion, driven like a person at a terminal: the real
// OpenSSH client runs on a pty (the agent's own pty helper), so window changes and Ctrl-C travel
// the whole way, and a grant removed in git ends the open session.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import type { Writable } from "node:stream";
import t, { type Test } from "tap";
import { PTY_HELPER } from "../../operators/agent/access/pty-helper.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";
import { type Bastion, podJobYaml, policyYaml, startBastion, userYaml } from "./bastion-fixture.ts";

const POD = "vision-main-0";

interface Terminal {
  child: ChildProcess;
  output(): string;
  type(text: string): void;
  resize(cols: number, rows: number): void;
  exited: Promise<number | null>;
}

/** `ssh` on a terminal of its own, 80x24 to begin with. */
function terminal(t: Test, b: Bastion, user: string, login: string): Terminal {
  const child = spawn(
    "python3",
    ["-c", PTY_HELPER, "80", "24", "ssh", ...b.sshArgs(user), "-t", `${login}@127.0.0.1`],
    { stdio: ["pipe", "pipe", "inherit", "pipe"] },
  );
  t.teardown(() => child.kill("SIGKILL"));
  let output = "";
  child.stdout?.on("data", (d: Buffer) => {
    output += d.toString();
  });
  return {
    child,
    output: () => output,
    type: (text) => child.stdin?.write(text),
    resize: (cols, rows) => (child.stdio[3] as Writable).write(`resize ${cols} ${rows}\n`),
    // "close", not "exit": what ssh printed last may still be in the pipe when it exits
    exited: new Promise((resolve) => child.once("close", (code) => resolve(code))),
  };
}

const seen = (term: Terminal, pattern: RegExp) =>
  waitFor(`terminal shows ${pattern}`, () => pattern.test(term.output()), onRealServers).catch(
    (error: Error) => {
      throw new Error(`${error.message}; the terminal shows ${JSON.stringify(term.output().slice(-600))}`);
    },
  );

t.test("interactive sessions", async (t) => {
  const policy = policyYaml("alice-shell", "  subjects:\n    users: [alice]\n  verbs: [shell]\n");
  const b = await startBastion(t, {
    users: ["alice", "bob"],
    pods: [POD],
    files: (keys) => ({
      "users.yaml": [
        userYaml("alice", ["user"], [keys.alice as string]),
        userYaml("bob", ["admin"], [keys.bob as string]),
      ].join("---\n"),
      "job.yaml": podJobYaml("vision"),
      "policy.yaml": policy,
      "admins.yaml": policyYaml("admins-shell", "  subjects:\n    roles: [admin]\n  verbs: [shell]\n"),
    }),
  });

  await t.test("the window size and its changes reach the program", async (t) => {
    const term = terminal(t, b, "alice", `alice+${POD}`);
    term.type("stty size; echo size-$((1+1))\n");
    await seen(term, /24 80\r?\n[\s\S]*size-2/);
    term.resize(120, 40);
    // The resize travels beside the keystrokes (the helper's control pipe, then ssh's SIGWINCH):
    // on a busy machine a command typed right after it may still see the old size. Ask until the
    // new size shows, each answer told apart by its own marker.
    const sizeAt = async (n: number) => {
      term.type(`stty size; echo size-$((${n}+0))\n`);
      await seen(term, new RegExp(`size-${n}\\r?\\n`));
      return new RegExp(`(\\d+ \\d+)\\r?\\nsize-${n}\\r?\\n`).exec(term.output())?.[1];
    };
    let size: string | undefined;
    for (let n = 3; n < 40 && size !== "40 120"; n++) size = await sizeAt(n);
    t.equal(size, "40 120", "the program sees the new size");
    term.type("exit 5\n");
    t.equal(await term.exited, 5);
  });

  await t.test("Ctrl-C interrupts the running program, not the session", async (t) => {
    const term = terminal(t, b, "alice", `alice+${POD}`);
    // Output the remote shell computed: ssh has put its own terminal in raw mode by now, so the
    // ^C below is sent as a byte instead of interrupting ssh.
    term.type("echo ready-$((2+2))\n");
    await seen(term, /ready-4/);
    term.type("sleep 300\n");
    await seen(term, /sleep 300\r\n/);
    term.type("\x03");
    term.type("echo status-$?\n");
    // 130 = 128 + SIGINT: sleep died of the interrupt, and the shell goes on.
    await seen(term, /status-130/);
    term.type("exit 0\n");
    t.equal(await term.exited, 0);
  });

  await t.test(
    "removing the grant in git ends the open session at once; other users keep theirs",
    async (t) => {
      const alice = terminal(t, b, "alice", `alice+${POD}`);
      const bob = terminal(t, b, "bob", `bob+${POD}`);
      alice.type("echo alive-$((3*3))\n");
      bob.type("echo alive-$((4*4))\n");
      await seen(alice, /alive-9/);
      await seen(bob, /alive-16/);
      await b.commit({ "policy.yaml": null });
      t.equal(await alice.exited, 255, "ssh reports the session cut");
      t.match(alice.output(), /access revoked: no AccessPolicy grants alice shell/);
      bob.type("echo still-$((5*5))\n");
      await seen(bob, /still-25/);
      const revoked = (await b.audit()).find((l) => l.actor === "alice" && l.result === "revoked");
      t.ok(revoked, "the revocation is audited");
      await t.test("and removing the user ends that user's sessions", async (t) => {
        await b.commit({
          "users.yaml": userYaml("alice", ["user"], [readFileSync(`${b.keys.alice}.pub`, "utf8").trim()]),
        });
        t.equal(await bob.exited, 255);
        t.match(bob.output(), /user bob is not declared in git/);
      });
    },
  );
});
