// OpenSSH's sftp-server, like `id -un` and shells' prompts, looks its uid up in the passwd
// database, and refuses to start for a uid that has no entry ("No user found for uid 1338"). A
// root agent that runs Domain pods as --pod-uid therefore gives that uid a system account — no
// home, no login shell, a group of the same id — as a Debian package does for its daemon.
import { execFileSync } from "node:child_process";

const NAME = "rlark-pod";

function lookup(database: "passwd" | "group", key: string): string | undefined {
  try {
    return execFileSync("getent", [database, key], { encoding: "utf8" }).split(":")[0] || undefined;
  } catch {
    return undefined; // getent exits 2 for "not found"
  }
}

/** Waits synchronously (the account is made once, before the first pod starts). */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * The account name of `uid`, created (with its group `uid`) when the uid has none. Several agents
 * on one machine may start at once: whoever loses the race to create it (a name taken, the
 * passwd lock held) finds the winner's entry and uses it.
 */
export function ensurePodAccount(uid: number): string {
  let failure = "";
  for (let attempt = 0; attempt < 20; attempt++) {
    const existing = lookup("passwd", String(uid));
    if (existing) return existing;
    if (attempt > 0) pause(100);
    const name = lookup("passwd", NAME) ? `${NAME}-${uid}` : NAME;
    try {
      if (!lookup("group", String(uid)))
        execFileSync("groupadd", ["--system", "--gid", String(uid), name], { stdio: "pipe" });
      execFileSync(
        "useradd",
        [
          "--system",
          "--uid",
          String(uid),
          "--gid",
          String(uid),
          "--no-create-home",
          "--home-dir",
          "/nonexistent",
          "--shell",
          "/usr/sbin/nologin",
          name,
        ],
        { stdio: "pipe" },
      );
      return name;
    } catch (error) {
      failure = (error as { stderr?: Buffer }).stderr?.toString().trim() || (error as Error).message;
      // Another agent's groupadd or useradd may have won: look again before giving up.
      if (!/lock|already exists|is not unique/i.test(failure)) break;
    }
  }
  const existing = lookup("passwd", String(uid));
  if (existing) return existing;
  throw new Error(
    `the pods' uid ${uid} has no passwd entry and making one failed (${failure}); ` +
      `create it (useradd --system --uid ${uid} ${NAME}) or choose an existing account's uid with --pod-uid`,
  );
}

const GROUP = "rlark-pods";

function groupId(name: string): number | undefined {
  try {
    const gid = execFileSync("getent", ["group", name], { encoding: "utf8" }).split(":")[2];
    return gid === undefined ? undefined : Number(gid);
  } catch {
    return undefined;
  }
}

/**
 * The gid of the group `rlark-pods`, created when missing: every pod user's one supplementary
 * group, which alone may search the runtime's private directories on the way to the pods' own
 * (pod-users.ts). Agents starting at once: the loser of the race uses the winner's group.
 */
export function ensurePodGroup(): number {
  let failure = "";
  for (let attempt = 0; attempt < 20; attempt++) {
    const existing = groupId(GROUP);
    if (existing !== undefined) return existing;
    if (attempt > 0) pause(100);
    try {
      execFileSync("groupadd", ["--system", GROUP], { stdio: "pipe" });
    } catch (error) {
      failure = (error as { stderr?: Buffer }).stderr?.toString().trim() || (error as Error).message;
      if (!/lock|already exists|is not unique/i.test(failure)) break;
    }
  }
  const existing = groupId(GROUP);
  if (existing !== undefined) return existing;
  throw new Error(
    `the pods' group ${GROUP} is missing and making it failed (${failure}); create it (groupadd --system ${GROUP})`,
  );
}
