// The pods' system account, made on this machine for real (root): several agents starting at once
// all end up with the one account, and none fails for losing the race to make it.
import { execFileSync, spawn } from "node:child_process";
import path from "node:path";
import t from "tap";
import { repoRoot } from "../../../../hack/kube/paths.ts";

/** A uid nobody on this machine has (system range, away from the default --pod-uid). */
function freeUid(): number {
  for (let uid = 1390; uid < 1490; uid++) {
    try {
      execFileSync("getent", ["passwd", String(uid)]);
    } catch {
      try {
        execFileSync("getent", ["group", String(uid)]);
      } catch {
        return uid;
      }
    }
  }
  throw new Error("no free uid in 1390-1489");
}

/** ensurePodAccount(uid) in a process of its own, as each agent calls it; resolves to the name. */
function ensureInProcess(uid: number): Promise<string> {
  const module = path.join(repoRoot, "operators/agent/runtimes/process/pod-account.ts");
  const code = `import(${JSON.stringify(module)}).then((m) => console.log(m.ensurePodAccount(${uid})))`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
    });
    child.once("error", reject);
    child.once("close", (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(err.trim()))));
  });
}

t.test("four agents making the pods' account at once all get the one account", async (t) => {
  const uid = freeUid();
  t.teardown(() => {
    const name = execFileSync("getent", ["passwd", String(uid)], { encoding: "utf8" }).split(":")[0];
    if (name) execFileSync("userdel", [name]);
    try {
      execFileSync("groupdel", [
        execFileSync("getent", ["group", String(uid)], { encoding: "utf8" }).split(":")[0] ?? "",
      ]);
    } catch {
      // userdel removed the group with the user
    }
  });
  const names = await Promise.all([1, 2, 3, 4].map(() => ensureInProcess(uid)));
  t.equal(new Set(names).size, 1, `one name for all: ${names.join(", ")}`);
  const entry = execFileSync("getent", ["passwd", String(uid)], { encoding: "utf8" })
    .trim()
    .split(":");
  t.equal(entry[0], names[0], "the passwd entry has that name");
  t.equal(entry[3], String(uid), "its group is the uid's own");
  t.equal(entry[6], "/usr/sbin/nologin", "no login shell");
  t.equal(
    execFileSync("getent", ["passwd"], { encoding: "utf8" })
      .split("\n")
      .filter((l) => l.split(":")[2] === String(uid)).length,
    1,
    "made once",
  );
});
