// The pods' users on a root agent (docs/process-runtime.md#users): the range never holds the
// sidecar's uid; a Task's directory in work/ is given to its uid without following a link the pod
// left there; a directory the Task names elsewhere is left alone; and the way down to work/ is
// opened to the group rlark-pods alone, or refused with the directory's name. Needs root.
import { chmodSync, chownSync, mkdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { PodUsers } from "../../../../operators/agent/runtimes/process/pod-users.ts";
import { tempDir } from "./helpers.ts";

t.test("the range never holds the sidecar's uid", async (t) => {
  const dir = tempDir(t);
  t.throws(
    () => new PodUsers({ firstUid: 1300, count: 100 }, join(dir, "work"), [1337]),
    /hold 1337, the sidecars' uid/,
  );
  t.throws(() => new PodUsers({ firstUid: 0 }, join(dir, "work")), /must be whole numbers above 0/);
});

t.test(
  "a Task's directory is its uid's; a link in it and a directory elsewhere are left alone",
  async (t) => {
    const dir = tempDir(t);
    const work = join(dir, "work");
    const users = new PodUsers({ firstUid: 1338, count: 10 }, work, [1337]);
    users.openToPods(work, false);
    const inside = join(work, "ns_task");
    const outside = join(dir, "elsewhere");
    mkdirSync(inside);
    mkdirSync(outside);
    const secret = join(dir, "secret");
    writeFileSync(secret, "root's\n", { mode: 0o600 });
    symlinkSync(secret, join(inside, "link"));
    const uid = users.claim("ns_task-0", "ns_task", inside);
    t.equal(uid, 1338, "the first free uid");
    t.equal(users.claim("ns_task-1", "ns_task", inside), uid, "another replica of the Task shares it");
    t.equal(users.claim("ns_other-0", "ns_other", outside), 1339, "another Task gets its own");
    t.equal(statSync(inside).uid, 1338, "the working dir in work/ is the Task's");
    t.equal(statSync(inside).mode & 0o777, 0o700, "and its alone");
    t.equal(statSync(secret).uid, 0, "a link in it is not followed");
    t.equal(statSync(outside).uid, 0, "a directory named elsewhere is left alone");
    users.release("ns_task-0");
    t.equal(statSync(inside).uid, 1338, "held while a replica runs");
    users.release("ns_task-1");
    t.equal(statSync(inside).uid, 0, "back to root once the Task's last pod is gone");
    t.same(users.prefix(1338).slice(0, 4), [
      "setpriv",
      "--reuid=1338",
      "--regid=1338",
      `--groups=${users.group}`,
    ]);
  },
);

t.test("the way down is opened to rlark-pods alone, or refused with the directory's name", async (t) => {
  const dir = tempDir(t);
  const data = join(dir, "data");
  mkdirSync(join(data, "runtime"), { recursive: true, mode: 0o700 });
  chmodSync(data, 0o700);
  const users = new PodUsers({ firstUid: 1338, count: 10 }, join(data, "runtime", "work"), [1337]);
  users.openToPods(join(data, "runtime", "work"), false);
  for (const at of [data, join(data, "runtime")]) {
    const { mode, gid } = statSync(at);
    t.equal(mode & 0o777, 0o710, `${at}: search for the group only`);
    t.equal(gid, users.group, `${at}: the group is rlark-pods`);
  }
  t.equal(statSync(join(data, "runtime", "work")).mode & 0o777, 0o710, "work/ lists nothing to anyone");

  const shared = join(dir, "shared");
  mkdirSync(join(shared, "runtime"), { recursive: true });
  chmodSync(shared, 0o750); // another group may read it: not root's alone to regroup
  chownSync(shared, 0, 4);
  t.throws(
    () => users.openToPods(join(shared, "runtime", "work"), false),
    new RegExp(`${shared} \\(mode 750, uid 0, gid 4\\) is not searchable by others, and not root's alone`),
  );
  t.equal(statSync(shared).gid, 4, "and left as it was");
});

t.test("a pod's PATH keeps only the directories its user can search, in order", async (t) => {
  const dir = tempDir(t);
  const users = new PodUsers({ firstUid: 1338, count: 10 }, join(dir, "work"), [1337]);
  // A root agent's own tools, as pyenv's shims in a 0700 /root: a pod's shell would find
  // python3 there and stop at "Permission denied" before /usr/bin.
  const home = join(dir, "home");
  mkdirSync(join(home, "shims"), { recursive: true });
  chmodSync(home, 0o700);
  chmodSync(dir, 0o755);
  const grouped = join(dir, "grouped");
  mkdirSync(join(grouped, "bin"), { recursive: true });
  chownSync(grouped, 0, users.group);
  chmodSync(grouped, 0o710);
  const path = `${join(home, "shims")}:/usr/bin:${join(dir, "missing")}:${join(grouped, "bin")}::/bin`;
  t.equal(users.reachablePath(path), `/usr/bin:${join(grouped, "bin")}:/bin`);
});
