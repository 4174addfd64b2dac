// The per-user byte rate with the real OpenSSH clients and HTTP: every way bytes move through
// the hub (SFTP both ways, a command's output and input, the pod proxy) waits for the user's
// rate, and two transfers of one user share it. Only lower bounds on time are asserted: a busy machine makes a transfer
// slower, never faster, so they cannot fail for load; without the rate each takes a fraction of
// a second.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import t from "tap";
import { hashPassword } from "../../operators/dashboard/index.ts";
import { FAST, login } from "../dashboard/dashboard-hub.ts";
import { freePort } from "../helpers/free-port.ts";
import { rawJobYaml } from "../helpers/job-yaml.ts";
import { podJobYaml, policyYaml, run, startBastion } from "./bastion-fixture.ts";

const POD = "vision-main-0";
const WEB = "web-main-0";
const RATE = 1024 * 1024;
/** What a transfer of `bytes` must take at least: one second's worth passes at once. */
const atLeastSeconds = (bytes: number) => (0.9 * (bytes - RATE)) / RATE;

/** Runs a client to its end, counting what it prints. */
function countOutput(command: string, args: string[]): Promise<{ code: number | null; bytes: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "inherit"] });
    let bytes = 0;
    child.stdout.on("data", (d: Buffer) => {
      bytes += d.length;
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, bytes }));
  });
}

t.test("the per-user byte rate", async (t) => {
  const webPort = await freePort();
  const password = await hashPassword("alice pw", FAST);
  const b = await startBastion(t, {
    users: ["alice"],
    pods: [POD, WEB],
    hub: { dashboard: true, access: { bytesPerSecondPerUser: RATE } },
    files: (keys) => ({
      "users.yaml": `apiVersion: rlinf.io/v1alpha1
kind: User
metadata: { name: alice }
spec:
  roles: [user]
  passwordHash: ${JSON.stringify(password)}
  sshPublicKeys: [${JSON.stringify(keys.alice)}]
`,
      "job.yaml": podJobYaml("vision"),
      // A pod serving its working directory over HTTP.
      "web.yaml": rawJobYaml({
        name: "web",
        kind: "Deployment",
        command: ["python3", "-m", "http.server", String(webPort), "--bind", "127.0.0.1"],
      }),
      "policy.yaml": policyYaml(
        "alice",
        '  subjects:\n    users: [alice]\n  verbs: [files, exec, proxy]\n  commands: ["head -c *", "wc -c"]\n',
      ),
    }),
  });
  const podDir = path.join(b.dir, "state", "work", "agent-local_vision-main");
  const local = path.join(b.dir, "local");
  mkdirSync(local);
  const sftp = (batch: string) => {
    const file = path.join(b.dir, `batch-${randomBytes(4).toString("hex")}`);
    writeFileSync(file, batch);
    const args = b.sshArgs("alice").map((a) => (a === "-p" ? "-P" : a));
    return run("sftp", [...args, "-b", file, `alice+${POD}@127.0.0.1`], "", { cwd: local });
  };
  const timed = async <T>(work: () => Promise<T>): Promise<{ result: T; seconds: number }> => {
    const start = performance.now();
    const result = await work();
    return { result, seconds: (performance.now() - start) / 1000 };
  };

  await t.test("two downloads of one user share the rate", async (t) => {
    const size = 1.5 * RATE;
    const one = randomBytes(size);
    const two = randomBytes(size);
    writeFileSync(path.join(podDir, "one.bin"), one);
    writeFileSync(path.join(podDir, "two.bin"), two);
    const { result, seconds } = await timed(() =>
      Promise.all([sftp("get one.bin\n"), sftp("get two.bin\n")]),
    );
    for (const each of result) t.equal(each.code, 0, each.stderr);
    t.ok(readFileSync(path.join(local, "one.bin")).equals(one), "the first file is intact");
    t.ok(readFileSync(path.join(local, "two.bin")).equals(two), "the second file is intact");
    t.ok(
      seconds >= atLeastSeconds(2 * size),
      `3 MiB together took ${seconds.toFixed(2)} s, at least ${atLeastSeconds(2 * size).toFixed(2)}`,
    );
  });

  await t.test("an upload waits for the rate", async (t) => {
    const size = 3 * RATE;
    const data = randomBytes(size);
    writeFileSync(path.join(local, "up.bin"), data);
    const { result, seconds } = await timed(() => sftp("put up.bin\n"));
    t.equal(result.code, 0, result.stderr);
    t.ok(readFileSync(path.join(podDir, "up.bin")).equals(data), "the upload is intact");
    t.ok(seconds >= atLeastSeconds(size), `3 MiB took ${seconds.toFixed(2)} s`);
  });

  await t.test("a command's output and input wait for the rate", async (t) => {
    const size = 3 * RATE;
    const out = await timed(() =>
      countOutput("ssh", [...b.sshArgs("alice"), `alice+${POD}@127.0.0.1`, `head -c ${size} /dev/zero`]),
    );
    t.equal(out.result.code, 0);
    t.equal(out.result.bytes, size, "every byte of output arrived");
    t.ok(out.seconds >= atLeastSeconds(size), `3 MiB of output took ${out.seconds.toFixed(2)} s`);

    const input = await timed(() =>
      run("ssh", [...b.sshArgs("alice"), `alice+${POD}@127.0.0.1`, "wc -c"], "y".repeat(size)),
    );
    t.equal(input.result.code, 0, input.result.stderr);
    t.equal(input.result.stdout.trim(), String(size), "every byte of input reached the command");
    t.ok(input.seconds >= atLeastSeconds(size), `3 MiB of input took ${input.seconds.toFixed(2)} s`);
  });

  await t.test("a download through the pod proxy waits for the rate", async (t) => {
    const size = 3 * RATE;
    const data = randomBytes(size);
    writeFileSync(path.join(b.dir, "state", "work", "agent-local_web-main", "served.bin"), data);
    const answer = await login(b.running.hub, { username: "alice", password: "alice pw" });
    t.equal(answer.status, 200, "alice logs in");
    const url = `${b.running.hub.url}/api/v1/namespaces/agent-local/pods/${WEB}/proxy/${webPort}/served.bin`;
    const { result, seconds } = await timed(async () => {
      const response = await fetch(url, { headers: { authorization: `Bearer ${answer.body.token}` } });
      return { status: response.status, body: Buffer.from(await response.arrayBuffer()) };
    });
    t.equal(result.status, 200);
    t.ok(result.body.equals(data), "the download is intact");
    t.ok(seconds >= atLeastSeconds(size), `3 MiB took ${seconds.toFixed(2)} s`);
  });

  t.same(
    (await b.audit()).filter((line) => line.result !== "ok").map((line) => line.error),
    [],
    "every access ended well: the rate slows, it never cuts",
  );
});
