// The SSH bastion with the real OpenSSH client: shells and commands in a process-runtime pod,
// through the hub and the agent's tunnel, as git's AccessPolicies allow, with an audit line each.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import t from "tap";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";
import { podJobYaml, policyYaml, run, startBastion, userYaml } from "./bastion-fixture.ts";

const POD = "vision-main-0";

t.test("shell, exec and refusals through hub and agent", async (t) => {
  const b = await startBastion(t, {
    users: ["alice", "bob", "carol"],
    pods: [POD],
    files: (keys) => ({
      "users.yaml": [
        userYaml("alice", ["user"], [keys.alice as string]),
        userYaml("bob", ["user"], [keys.bob as string]),
        userYaml("carol", ["viewer"], [keys.carol as string]),
      ].join("---\n"),
      "job.yaml": podJobYaml("vision"),
      "policies.yaml": [
        policyYaml(
          "alice-vision",
          "  subjects:\n    users: [alice]\n  targets:\n    clusters: [local]\n    jobSelector:\n      matchLabels:\n        team: vision\n  verbs: [shell]\n",
        ),
        policyYaml(
          "users-inspect",
          '  subjects:\n    roles: [user]\n  verbs: [exec]\n  commands: ["pwd", "cat marker.txt", "printenv *"]\n',
        ),
      ].join("---\n"),
    }),
  });
  const host = (login: string) => `${login}@127.0.0.1`;

  await t.test(
    "a shell runs in the pod's directory with its environment; exit 3 -> ssh exits 3",
    async (t) => {
      const result = await run(
        "ssh",
        [...b.sshArgs("alice"), "-tt", host(`alice+${POD}`)],
        "cat marker.txt; echo env=$POD_SECRET_HINT; stty size; exit 3\n",
      );
      t.equal(result.code, 3, result.stderr);
      t.match(result.stdout, /here/);
      t.match(result.stdout, /env=from-the-pod/);
    },
  );

  await t.test("a shell without a pty reads commands from stdin and ends at EOF", async (t) => {
    const result = await run(
      "ssh",
      [...b.sshArgs("alice"), "-T", host(`alice+${POD}`)],
      "echo no-tty; exit 4\n",
    );
    t.equal(result.code, 4, result.stderr);
    t.equal(result.stdout, "no-tty\n");
  });

  await t.test(
    "exec runs an allowlisted command without a shell; exit status and output come back",
    async (t) => {
      const ok = await run("ssh", [...b.sshArgs("bob"), host(`bob+${POD}`), "cat marker.txt"]);
      t.equal(ok.code, 0, ok.stderr);
      t.equal(ok.stdout, "here\n");
      const env = await run("ssh", [...b.sshArgs("bob"), host(`bob+${POD}`), "printenv POD_SECRET_HINT"]);
      t.equal(env.stdout, "from-the-pod\n");
      const failing = await run("ssh", [
        ...b.sshArgs("bob"),
        host(`bob+${POD}`),
        "printenv NOT_SET_ANYWHERE",
      ]);
      t.equal(failing.code, 1, "printenv's own exit status");
    },
  );

  await t.test(
    "refused: commands off the allowlist, shell syntax, a shell without the grant, viewers",
    async (t) => {
      const offList = await run("ssh", [...b.sshArgs("bob"), host(`bob+${POD}`), "rm marker.txt"]);
      t.equal(offList.code, 1);
      t.match(offList.stderr, /command not in the exec allowlist/);
      const smuggled = await run("ssh", [...b.sshArgs("bob"), host(`bob+${POD}`), "printenv; rm marker.txt"]);
      t.equal(smuggled.code, 1);
      t.match(smuggled.stderr, /no shell syntax/);
      const shell = await run("ssh", [...b.sshArgs("bob"), "-tt", host(`bob+${POD}`)], "exit 0\n");
      t.equal(shell.code, 1);
      t.match(shell.stderr, /no AccessPolicy grants bob shell on local\/agent-local\/vision-main-0/);
      const viewer = await run("ssh", [...b.sshArgs("carol"), host(`carol+${POD}`), "pwd"]);
      t.equal(viewer.code, 1);
      t.match(viewer.stderr, /carol is a viewer: exec acts on the pod and needs the user or admin role/);
      const noPod = await run("ssh", [...b.sshArgs("alice"), host("alice+nothing-here"), "pwd"]);
      t.match(noPod.stderr, /no pod nothing-here/);
    },
  );

  await t.test("a key that is not the user's does not log in", async (t) => {
    const result = await run("ssh", [...b.sshArgs("bob"), host(`alice+${POD}`), "pwd"]);
    t.equal(result.code, 255);
    t.match(result.stderr, /Permission denied/);
  });

  await t.test("X11 and agent forwarding and legacy scp are refused and audited", async (t) => {
    const agentSocket = path.join(b.dir, "agent.sock");
    const agent = spawn("ssh-agent", ["-D", "-a", agentSocket], { stdio: "ignore" });
    t.teardown(() => agent.kill());
    await waitFor("ssh-agent listening", () => existsSync(agentSocket), onRealServers);
    const forwarded = await run(
      "ssh",
      [...b.sshArgs("alice"), "-X", "-A", "-tt", host(`alice+${POD}`)],
      "exit 0\n",
      {
        env: { ...process.env, DISPLAY: ":99", SSH_AUTH_SOCK: agentSocket },
      },
    );
    t.equal(forwarded.code, 0, "the shell itself still runs");
    const scp = await run("scp", [
      ...b.sshArgs("alice").map((a) => (a === "-p" ? "-P" : a)),
      "-O",
      `${host(`alice+${POD}`)}:marker.txt`,
      path.join(b.dir, "copy"),
    ]);
    t.not(scp.code, 0, "legacy scp fails");
    const refused = (await b.audit()).filter((l) => l.result === "refused").map((l) => l.error ?? "");
    t.ok(
      refused.some((e) => e.includes("X11")),
      "X11 audited",
    );
    t.ok(
      refused.some((e) => e.includes("agent forwarding")),
      "agent forwarding audited",
    );
    t.ok(
      refused.some((e) => e.includes("legacy scp")),
      "legacy scp audited",
    );
  });

  await t.test("every access left one audit line with actor, target, verb, bytes and result", async (t) => {
    const lines = await b.audit();
    const shell = lines.find((l) => l.actor === "alice" && l.verb === "shell" && l.exitCode === 3);
    t.ok(shell, "the shell that exited 3");
    t.equal(shell?.target, "local/agent-local/vision-main-0");
    t.equal(shell?.result, "ok");
    t.ok((shell?.bytesIn ?? 0) > 0 && (shell?.bytesOut ?? 0) > 0, "bytes counted both ways");
    const exec = lines.find((l) => l.actor === "bob" && l.verb === "exec" && l.result === "ok");
    t.equal(exec?.program, "cat", "exec records the program, never its arguments");
    t.ok(lines.some((l) => l.actor === "bob" && l.verb === "shell" && l.result === "denied"));
    t.notOk(JSON.stringify(lines).includes("from-the-pod"), "no contents in the audit");
    t.notOk(JSON.stringify(lines).includes("marker.txt"), "no arguments in the audit");
  });
});
