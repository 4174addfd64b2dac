// A viewer only reads (seed 000 §15), whatever an AccessPolicy says. The attack: git grants the
// viewer role every verb on every pod; carol, a viewer, tries a shell, a command, SFTP and a
// forwarded port through the real bastion with the real OpenSSH client. Each is refused before it
// reaches the pod, in words that name the role, and audited. dan, a user under the same policy,
// gets the shell: the refusal is the role's, not the policy's.
import t from "tap";
import { podJobYaml, policyYaml, run, startBastion, userYaml } from "../access/bastion-fixture.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const POD = "vision-main-0";
const EVERYTHING =
  "  subjects:\n    roles: [viewer, user]\n  verbs: [shell, exec, files, logs, forward, proxy]\n";

t.test("a viewer granted every verb by a policy still only reads", async (t) => {
  const b = await startBastion(t, {
    users: ["carol", "dan"],
    pods: [POD],
    files: (keys) => ({
      "users.yaml": [
        userYaml("carol", ["viewer"], [keys.carol as string]),
        userYaml("dan", ["user"], [keys.dan as string]),
      ].join("---\n"),
      "job.yaml": podJobYaml("vision"),
      "policies.yaml": policyYaml("everyone-everything", `${EVERYTHING}  commands: ["pwd"]\n`),
    }),
  });
  const host = (login: string) => `${login}@127.0.0.1`;
  const refusal = /carol is a viewer: (\w+) acts on the pod and needs the user or admin role/;

  const shell = await run("ssh", [...b.sshArgs("carol"), "-T", host(`carol+${POD}`)], "echo reached\n");
  t.not(shell.code, 0);
  t.notMatch(shell.stdout, /reached/, "no shell ran");
  t.match(shell.stderr, refusal);

  const exec = await run("ssh", [...b.sshArgs("carol"), host(`carol+${POD}`), "pwd"]);
  t.not(exec.code, 0);
  t.equal(exec.stdout, "", "the command did not run");
  t.match(exec.stderr, refusal);

  const sftpArgs = b.sshArgs("carol").map((a) => (a === "-p" ? "-P" : a)); // sftp's port option
  const sftp = await run("sftp", [...sftpArgs, "-b", "-", host(`carol+${POD}`)], "ls\n");
  t.not(sftp.code, 0, "sftp refused");
  t.notMatch(sftp.stdout, /marker\.txt/, "no listing of the pod's files");

  const forward = await run("ssh", [...b.sshArgs("carol"), "-W", `${POD}:8080`, host(`carol+${POD}`)]);
  t.not(forward.code, 0, "no forwarded connection");

  const dan = await run("ssh", [...b.sshArgs("dan"), "-T", host(`dan+${POD}`)], "echo reached\n");
  t.equal(dan.code, 0, dan.stderr);
  t.match(dan.stdout, /reached/, "a user under the same policy gets the shell");

  const audit = await waitFor(
    "carol's four refusals audited",
    async () => {
      const mine = (await b.audit()).filter((r) => r.actor === "carol" && r.result === "denied");
      const verbs = new Set<string>(mine.map((r) => r.verb));
      return ["shell", "exec", "files", "forward"].every((v) => verbs.has(v)) ? mine : undefined;
    },
    onRealServers,
  );
  for (const record of audit) t.match(record.error, refusal, `${record.verb}: the role's refusal audited`);
});
