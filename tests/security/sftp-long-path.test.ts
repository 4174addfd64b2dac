// Issue 31, item 7: one long SFTP path held the event loop of the agent (and of a hub it runs in)
// for seconds. Through hub and agent with the real OpenSSH client carrying raw SFTP packets: paths
// past PATH_MAX or too many components are refused with SSH_FX_FAILURE saying which bound, and
// while one session keeps hundreds of deep paths in resolution, another session is answered.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import path from "node:path";
import t from "tap";
import { policyYaml, startAliceBastion } from "../access/bastion-fixture.ts";
import { FX, rawSftp } from "./sftp-client.ts";

const POD = "vision-main-0";
/** Levels of the deep tree: with its last name, just inside the component bound (256). */
const DEPTH = 250;
const IN_FLIGHT = 300;

t.test("long paths are refused at once and deep ones do not hold other sessions", async (t) => {
  const b = await startAliceBastion(
    t,
    policyYaml("alice-files", "  subjects:\n    users: [alice]\n  verbs: [files]\n"),
  );
  const podDir = path.join(b.dir, "state", "work", "agent-local_vision-main");
  const deep = "d/".repeat(DEPTH);
  mkdirSync(path.join(podDir, deep), { recursive: true });

  const session = async () => {
    const child: ChildProcessWithoutNullStreams = spawn(
      "ssh",
      [...b.sshArgs("alice"), "-s", `alice+${POD}@127.0.0.1`, "sftp"],
      { stdio: ["pipe", "pipe", "pipe"] },
    );
    t.teardown(() => child.kill());
    child.stderr.resume();
    const sftp = rawSftp(child.stdin, child.stdout);
    await sftp.init();
    return sftp;
  };
  const a = await session();
  const b2 = await session();

  for (const [what, name] of [
    ["16 KiB", "a/".repeat(8 * 1024)],
    ["32 KiB", "a/".repeat(16 * 1024)],
    ["4097 bytes", "a".repeat(4097)],
  ] as const) {
    const answer = await a.open(name);
    t.equal(answer.code, FX.FAILURE, `a path of ${what}: SSH_FX_FAILURE`);
    t.equal(answer.message, "paths are limited to 4096 bytes", what);
  }
  const many = await a.mkdir("a/".repeat(300));
  t.equal(many.code, FX.FAILURE, "300 components");
  t.equal(many.message, "paths are limited to 256 components");
  t.equal((await a.stat(`${deep}missing`)).code, FX.NO_SUCH_FILE, "a deep path inside the bounds is served");

  // Hundreds of deep paths in flight in one session; once the first is answered, another session
  // asks: it is answered while the first still waits for most of its answers.
  const first = a.stat(`${deep}missing`);
  const rest = Array.from({ length: IN_FLIGHT - 1 }, () => a.stat(`${deep}missing`));
  await first;
  const other = await b2.stat(".");
  const stillWaiting = a.outstanding();
  t.equal(other.type, 105, "the other session's stat is answered (ATTRS)");
  t.ok(stillWaiting > 0, `answered while ${stillWaiting} of the first session's ${IN_FLIGHT} still waited`);
  const answers = await Promise.all(rest);
  t.ok(
    answers.every((answer) => answer.code === FX.NO_SUCH_FILE),
    "every deep request answered by the server",
  );
});
