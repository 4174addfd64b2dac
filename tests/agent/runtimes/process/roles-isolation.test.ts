// A root agent's process pods are not root (docs/process-runtime.md#users). The attack: pod
// "thief", of another Task, tries to read pod "keeper"'s files, list the runtime's work dir, read
// keeper's log in the runtime's records and the agent's credentials, next to the runtime's state
// dir as `rlark agent` keeps them; and the same again from an access session into thief. The
// kernel refuses each (Permission denied). A Task that opts into root with raw.runAsRoot does
// reach them: the opt-in is what it says. Needs root.
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { onProcesses, waitFor } from "../../../helpers/wait-for.ts";
import { rawTask, tempDir } from "./helpers.ts";
import { openRuntime, waitForPod } from "./runtime-helpers.ts";

const FIRST_UID = 1338;

t.test(
  "a pod cannot read another Task's files, the runtime's records or the agent's credentials",
  async (t) => {
    const dataDir = tempDir(t);
    const stateDir = join(dataDir, "runtime");
    const credentials = join(dataDir, "credentials.json");
    writeFileSync(credentials, '{"key":"the agent\'s private key"}\n', { mode: 0o600 });
    const { runtime } = await openRuntime(t, { stateDir, podUsers: { firstUid: FIRST_UID } });
    const work = join(stateDir, "work");
    const keeperDir = join(work, "agent-local_keeper");
    const keeperLog = join(stateDir, "pods", "agent-local_keeper-0", "output.log");
    const attempts = [
      `cat ${keeperDir}/secret.txt`,
      `ls ${keeperDir}`,
      `ls ${work}`,
      `cat ${keeperLog}`,
      `cat ${credentials}`,
      `ls ${dataDir}`,
    ];
    // Each attempt's output and exit status, into the pod's own directory.
    const attack = `${attempts.map((a, i) => `${a} > out-${i}.txt 2>&1; echo "rc=$?" >> out-${i}.txt`).join("\n")}
id -u > uid.txt; exec sleep 300`;
    const keeperTask = rawTask("keeper", {
      kind: "Deployment",
      command: ["sh", "-c", "echo keepers-secret > secret.txt; echo keeper-logged; exec sleep 300"],
    });
    await runtime.apply([keeperTask]);
    await waitForPod(runtime, "keeper-0", "running", (p) => p.phase === "Running");
    await waitFor(
      "keeper's secret written",
      () => readFileSync(join(keeperDir, "secret.txt"), "utf8"),
      onProcesses,
    );
    const thiefTask = rawTask("thief", { kind: "Deployment", command: ["sh", "-c", attack] });
    const rootTask = rawTask("trusted", {
      kind: "Deployment",
      command: ["sh", "-c", attack],
      runAsRoot: true,
    });
    await runtime.apply([keeperTask, thiefTask, rootTask]);
    const answer = (task: string, file: string) =>
      waitFor(
        `${task}'s ${file}`,
        () => readFileSync(join(work, `agent-local_${task}`, file), "utf8").trim() || undefined,
        onProcesses,
      );

    const keeperUid = statSync(keeperDir).uid;
    const thiefUid = Number(await answer("thief", "uid.txt"));
    t.ok(keeperUid >= FIRST_UID && thiefUid >= FIRST_UID, "both run as uids of the range, not root");
    t.not(thiefUid, keeperUid, "each Task its own uid");
    t.equal(statSync(keeperDir).mode & 0o777, 0o700, "a pod's directory is its own alone");
    t.equal(statSync(work).mode & 0o777, 0o710, "work/ is searchable by the pods' group, not listable");
    for (const dir of [dataDir, stateDir, work]) {
      t.equal(statSync(dir).mode & 0o007, 0, `${dir} is closed to others`);
      t.equal(statSync(dir).uid, 0, `${dir} stays root's`);
    }
    const podsGroup = execFileSync("getent", ["group", "rlark-pods"], { encoding: "utf8" }).split(":")[2];
    t.equal(String(statSync(dataDir).gid), podsGroup, "the data dir is searchable by rlark-pods alone");
    for (const [i, attempt] of attempts.entries()) {
      const out = await answer("thief", `out-${i}.txt`);
      t.match(out, /Permission denied/, `the kernel refuses: ${attempt}`);
      t.notMatch(out, /rc=0$|keepers-secret|keeper-logged|private key/, `nothing leaked: ${attempt}`);
    }

    // A session into thief runs as thief's uid, and meets the same walls.
    const environment = runtime.access.environment({ namespace: "agent-local", name: "thief-0" });
    const prefix = environment?.enter?.prefix ?? [];
    const session = (argv: string[]) => {
      const [program, ...args] = [...prefix, ...argv] as [string, ...string[]];
      return spawnSync(program, args, { cwd: environment?.cwd, env: environment?.env, encoding: "utf8" });
    };
    t.equal(session(["id", "-u"]).stdout.trim(), String(thiefUid), "the session is the pod's user");
    for (const file of [join(keeperDir, "secret.txt"), credentials]) {
      const read = session(["cat", file]);
      t.not(read.status, 0);
      t.match(read.stderr, /Permission denied/, `a session cannot read ${file}`);
    }

    // The opt-in: root, and everything above is open to it.
    t.equal(await answer("trusted", "uid.txt"), "0", "runAsRoot runs as the agent's root");
    t.match(await answer("trusted", "out-0.txt"), /keepers-secret\nrc=0/, "and so reads keeper's files");
    t.equal(
      execFileSync("stat", ["-c", "%u", join(work, "agent-local_trusted")], { encoding: "utf8" }).trim(),
      "0",
    );
  },
);
