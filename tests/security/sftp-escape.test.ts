// Issue 31, item 6: SFTP out of a process pod's directory through symlinks the pod's processes
// made there, with the real `sftp` client through hub and agent. A symlink whose target does not
// exist, a chain of them, and `..` after a symlink (its target's parent, not the link's) must not
// make, move or change a file outside the directory, for open, mkdir, rename and setstat alike;
// the same links pointing inside still work.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Duplex } from "node:stream";
import t from "tap";
import { containerPolicy, startFiles } from "../../operators/agent/access/files.ts";
import { filterSftp, SERVED_REQUESTS } from "../../operators/agent/runtimes/shared/sftp-filter.ts";
import { policyYaml, run, startAliceBastion } from "../access/bastion-fixture.ts";
import { FX, HANDLE, rawSftp } from "./sftp-client.ts";

const POD = "vision-main-0";

t.test("symlinks in the pod's directory do not lead SFTP out of it", async (t) => {
  const b = await startAliceBastion(
    t,
    policyYaml("alice-files", "  subjects:\n    users: [alice]\n  verbs: [files]\n"),
  );
  const podDir = path.join(b.dir, "state", "work", "agent-local_vision-main");
  // Outside the pod's directory: a directory two levels deep, and a file there.
  const outside = path.join(b.dir, "outside");
  const deep = path.join(outside, "deep", "er");
  mkdirSync(deep, { recursive: true });
  const existing = path.join(outside, "existing.txt");
  writeFileSync(existing, "outside\n", { mode: 0o644 });
  const local = path.join(b.dir, "local");
  mkdirSync(local);
  writeFileSync(path.join(local, "up.txt"), "uploaded\n");
  writeFileSync(path.join(podDir, "inside.txt"), "inside\n");
  mkdirSync(path.join(podDir, "sub"));

  // What a pod's process (or a user's shell in it) may leave in its directory:
  symlinkSync(path.join(outside, "dangling.txt"), path.join(podDir, "dangling")); // target missing
  symlinkSync("chain-2", path.join(podDir, "chain-1")); // a chain ending outside, target missing
  symlinkSync(path.relative(podDir, path.join(outside, "chained.txt")), path.join(podDir, "chain-2"));
  symlinkSync(path.join(outside, "newdir", "x"), path.join(podDir, "dangling-deeper")); // parent missing too
  symlinkSync(deep, path.join(podDir, "deep-link")); // deep-link/.. is outside/deep
  symlinkSync(existing, path.join(podDir, "existing-link"));
  symlinkSync("sub/made.txt", path.join(podDir, "inside-dangling")); // dangling, but inside
  // A target through a directory whose name is not UTF-8: decoded, it would name nothing there.
  mkdirSync(Buffer.concat([Buffer.from(`${podDir}/`), Buffer.from([0xff])]));
  const throughBytes = Buffer.concat([
    Buffer.from([0xff]),
    Buffer.from(`/../${path.relative(podDir, outside)}/bytes.txt`),
  ]);
  symlinkSync(throughBytes, path.join(podDir, "bytes-link"));

  const sftp = (batch: string) => {
    const file = path.join(b.dir, `batch-${randomBytes(4).toString("hex")}`);
    writeFileSync(file, `${batch}\n`);
    const args = b.sshArgs("alice").map((a) => (a === "-p" ? "-P" : a));
    return run("sftp", [...args, "-b", file, `alice+${POD}@127.0.0.1`], "", { cwd: local });
  };
  const before = readdirSync(outside, { recursive: true }).sort();

  for (const batch of [
    "put up.txt dangling",
    "put up.txt chain-1",
    "put up.txt deep-link/../escaped.txt",
    "put up.txt sub/../deep-link/../escaped.txt",
    "mkdir deep-link/../made-dir",
    "rename inside.txt deep-link/../moved.txt",
    "chmod 600 existing-link",
    "chmod 600 deep-link/../../existing.txt",
    "put up.txt existing-link",
    "ln -s ../outside made-link",
    "put up.txt bytes-link",
  ]) {
    const result = await sftp(batch);
    t.not(result.code, 0, `${batch} is refused`);
    t.match(result.stderr, /Permission denied/, `${batch}: ${result.stderr.trim()}`);
  }
  t.strictSame(readdirSync(outside, { recursive: true }).sort(), before, "nothing was made or moved outside");
  t.equal(statSync(existing).mode & 0o777, 0o644, "the outside file's mode is unchanged");
  t.ok(existsSync(path.join(podDir, "inside.txt")), "the file to move stayed");

  // The kernel fails these itself: they pass the policy and fail in the server, making nothing.
  const deeper = await sftp("put up.txt dangling-deeper");
  t.not(deeper.code, 0, "a link whose target's parent is missing fails in the server");
  t.notOk(existsSync(path.join(outside, "newdir")));

  const inside = await sftp(
    "put up.txt inside-dangling\nmkdir sub/../made-here\nrename inside.txt sub/moved.txt",
  );
  t.equal(inside.code, 0, `links and .. that stay inside work: ${inside.stderr}`);
  t.ok(existsSync(path.join(podDir, "sub", "made.txt")), "made through a dangling link pointing inside");
  t.ok(statSync(path.join(podDir, "made-here")).isDirectory());
  t.ok(existsSync(path.join(podDir, "sub", "moved.txt")));
});

// A kubernetes pod's files are in its container, where the agent cannot look: the filter asks the
// container's sftp-server where each path leads. Here that server runs on this machine, in the
// root a container would have, with the same links.
t.test("the container policy refuses the same links, asking the server where they lead", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-sftp-escape-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const root = path.join(dir, "root");
  const outside = path.join(dir, "outside");
  const deep = path.join(outside, "deep", "er");
  mkdirSync(path.join(root, "sub"), { recursive: true });
  mkdirSync(deep, { recursive: true });
  symlinkSync(path.join(outside, "dangling.txt"), path.join(root, "dangling"));
  symlinkSync("chain-2", path.join(root, "chain-1"));
  symlinkSync("../outside/chained.txt", path.join(root, "chain-2"));
  symlinkSync(path.join(outside, "newdir", "x"), path.join(root, "dangling-deeper"));
  symlinkSync(deep, path.join(root, "deep-link"));
  symlinkSync("sub/made.txt", path.join(root, "inside-dangling"));
  const child = spawn("/usr/lib/openssh/sftp-server", ["-p", SERVED_REQUESTS, "-l", "ERROR"], {
    cwd: root,
    stdio: ["pipe", "pipe", "ignore"],
  });
  const stream = filterSftp(
    Duplex.from({ writable: child.stdin, readable: child.stdout }),
    containerPolicy(root),
  );
  t.teardown(() => stream.destroy());
  const sftp = rawSftp(stream, stream);
  await sftp.init();
  const before = readdirSync(outside, { recursive: true }).sort();

  for (const name of ["dangling", "chain-1", "deep-link/../escaped.txt", "sub/../deep-link/../escaped.txt"])
    t.equal((await sftp.open(name)).code, FX.PERMISSION_DENIED, `open ${name}`);
  t.equal((await sftp.mkdir("deep-link/../made-dir")).code, FX.PERMISSION_DENIED, "mkdir after a link's ..");
  t.equal(
    (await sftp.open("dangling-deeper")).code,
    FX.NO_SUCH_FILE,
    "the server fails what the kernel fails",
  );
  t.strictSame(readdirSync(outside, { recursive: true }).sort(), before, "nothing was made outside");
  t.equal((await sftp.open("inside-dangling")).type, HANDLE, "a dangling link pointing inside is served");
  t.ok(existsSync(path.join(root, "sub", "made.txt")));
});

// sftp-server reads a path up to its first NUL byte and takes a string that ends with one: the
// policy must not judge a longer name than the server opens.
t.test("a name with a NUL byte is refused", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-sftp-escape-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const outsideFile = path.join(dir, "secret.txt");
  writeFileSync(outsideFile, "secret\n");
  const root = path.join(dir, "root");
  mkdirSync(root);
  symlinkSync(outsideFile, path.join(root, "secret-link"));
  const local = await startFiles(root);
  t.teardown(() => local.destroy());
  const sftp = rawSftp(local, local);
  await sftp.init();
  t.equal((await sftp.open("secret-link", false)).code, FX.PERMISSION_DENIED, "the link itself is refused");
  const nul = Buffer.from("secret-link\0");
  t.equal((await sftp.open(nul, false)).code, FX.PERMISSION_DENIED, "with a NUL after it too");
  t.equal((await sftp.stat(Buffer.from("secret-link\0/x"))).code, FX.PERMISSION_DENIED, "a NUL inside");
  t.equal((await sftp.stat(".")).type, 105, "the session goes on");
});
