// The bastion's limits with the real OpenSSH client: sessions per user, the idle timeout, and
// the agents' login namespace, which no user login reaches.
import { spawn } from "node:child_process";
import t from "tap";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";
import { policyYaml, run, startAliceBastion } from "./bastion-fixture.ts";

const POD = "vision-main-0";

t.test("limits", async (t) => {
  const b = await startAliceBastion(
    t,
    policyYaml("alice-shell", "  subjects:\n    users: [alice]\n  verbs: [shell]\n"),
    { access: { maxSessionsPerUser: 1, idleTimeoutMs: 1_500 } },
  );

  await t.test("one session per user here: the second is refused; an idle one is closed", async (t) => {
    // stdin stays open and silent: the session is idle from its start.
    const first = spawn("ssh", [...b.sshArgs("alice"), "-tt", `alice+${POD}@127.0.0.1`], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    t.teardown(() => first.kill());
    let output = "";
    first.stdout.on("data", (d: Buffer) => {
      output += d.toString();
    });
    first.stderr.on("data", (d: Buffer) => {
      output += d.toString();
    });
    await waitFor("the first session is open", () => b.running.hub.bastion.open === 1, onRealServers);
    const second = await run("ssh", [...b.sshArgs("alice"), "-tt", `alice+${POD}@127.0.0.1`], "exit 0\n");
    t.equal(second.code, 1);
    t.match(second.stderr, /too many open sessions/);
    // "close", not "exit": ssh's last words may still be in the pipe when it exits
    const code = await new Promise<number | null>((resolve) => first.once("close", resolve));
    t.equal(code, 255, "the idle session was cut");
    t.match(output, /idle for more than/);
    const idle = (await b.audit()).find((l) => l.result === "error" && /idle/.test(l.error ?? ""));
    t.ok(idle, "the idle close is audited");
  });

  await t.test("a login in the agents' namespace never reaches the user role", async (t) => {
    const result = await run("ssh", [...b.sshArgs("alice"), `rlark-agent.alice+${POD}@127.0.0.1`, "pwd"]);
    t.equal(result.code, 255);
    t.match(result.stderr, /Permission denied/);
  });
});
