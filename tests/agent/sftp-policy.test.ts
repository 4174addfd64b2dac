// The SFTP path policy and size limit with OpenSSH's real sftp-server behind the packet filter,
// spoken to packet by packet: the container policy (paths judged by name, then resolved by the
// server itself, as for kubernetes pods whose files the agent cannot see) and the local one
// (process pods, resolved on this machine) refuse the same escapes.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Duplex } from "node:stream";
import t from "tap";
import { containerPolicy, startFiles } from "../../operators/agent/access/files.ts";
import { filterSftp, SERVED_REQUESTS } from "../../operators/agent/runtimes/shared/sftp-filter.ts";
import { insideNamed } from "../../operators/agent/runtimes/shared/sftp-policy.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const SERVER = "/usr/lib/openssh/sftp-server";
const OK = 0;
const DENIED = 3;

/** `dir/` and a name of one byte that is not UTF-8 (0xff), then `rest`; just the name without dir. */
const notUtf8 = (dir: string, rest = "") =>
  Buffer.concat([Buffer.from(dir ? `${dir}/` : ""), Buffer.from([0xff]), Buffer.from(rest)]);

/** A minimal SFTP v3 client: one request at a time, answers by id. */
function client(stream: Duplex) {
  let pending = Buffer.alloc(0);
  let waiting: ((packet: Buffer) => void) | undefined;
  stream.on("data", (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 4 && pending.length >= 4 + pending.readUInt32BE(0)) {
      const packet = pending.subarray(4, 4 + pending.readUInt32BE(0));
      pending = pending.subarray(4 + packet.length);
      waiting?.(packet);
    }
  });
  let id = 0;
  const str = (s: string | Buffer) => {
    const b = Buffer.from(s);
    const l = Buffer.alloc(4);
    l.writeUInt32BE(b.length);
    return Buffer.concat([l, b]);
  };
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  const send = (type: number, ...parts: Buffer[]): Promise<Buffer> => {
    const body = Buffer.concat([Buffer.from([type]), ...(type === 1 ? [] : [u32(++id)]), ...parts]);
    const answer = new Promise<Buffer>((resolve) => {
      waiting = resolve;
    });
    stream.write(Buffer.concat([u32(body.length), body]));
    return answer;
  };
  /** The status code of a STATUS answer, or -1 for any other answer. */
  const status = (packet: Buffer) => (packet[0] === 101 ? packet.readUInt32BE(5) : -1);
  return {
    init: () => send(1, u32(3)),
    /** The status code answering a packet of `body` as it is (no id added). */
    raw: async (body: Buffer) => {
      const answer = new Promise<Buffer>((resolve) => {
        waiting = resolve;
      });
      stream.write(Buffer.concat([u32(body.length), body]));
      return status(await answer);
    },
    open: async (file: string) => {
      const answer = await send(3, str(file), u32(0x02 | 0x08 | 0x10), u32(0));
      return answer[0] === 102 ? answer.subarray(9, 9 + answer.readUInt32BE(5)) : status(answer);
    },
    write: async (handle: Buffer, offset: number, data: Buffer) => {
      const at = Buffer.alloc(8);
      at.writeBigUInt64BE(BigInt(offset));
      return status(await send(6, str(handle), at, str(data)));
    },
    close: async (handle: Buffer) => status(await send(4, str(handle))),
    /** "attrs" when the file was found, or the status code. */
    stat: async (file: string | Buffer) => {
      const answer = await send(17, str(file));
      return answer[0] === 105 ? "attrs" : status(answer);
    },
    realpath: async (file: string) => {
      const answer = await send(16, str(file));
      return answer[0] === 104 ? answer.subarray(13, 13 + answer.readUInt32BE(9)).toString() : status(answer);
    },
    lstat: async (file: string) => {
      const answer = await send(7, str(file));
      return answer[0] === 105 ? "attrs" : status(answer);
    },
    remove: async (file: string) => status(await send(13, str(file))),
    mkdir: async (file: string) => status(await send(14, str(file), u32(0))),
    symlink: async (target: string, link: string) => status(await send(20, str(target), str(link))),
  };
}

t.test("insideNamed judges a path by its name against the root", async (t) => {
  t.ok(insideNamed("/work", "a/b", false));
  t.ok(insideNamed("/work", "/work/a", false));
  t.ok(insideNamed("/work", "", false));
  t.notOk(insideNamed("/work", "/etc/passwd", false));
  t.notOk(insideNamed("/work", "/workshop", false), "a sibling sharing the prefix");
  t.notOk(insideNamed("/work", "a/../b", false), ".. is refused outside realpath: a symlink would change it");
  t.ok(insideNamed("/work", "a/../b", true), "realpath only asks where a name leads");
  t.notOk(insideNamed("/work", "..", true));
  t.ok(insideNamed("/", "/etc/passwd", false), "the root / holds everything");
});

t.test("the container policy in front of a real sftp-server", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-sftp-policy-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const root = path.join(dir, "root");
  mkdirSync(path.join(root, "sub"), { recursive: true });
  symlinkSync("/etc", path.join(root, "etc-link"));
  symlinkSync("sub", path.join(root, "sub-link"));
  symlinkSync("/etc", notUtf8(root));
  const child = spawn(SERVER, ["-p", SERVED_REQUESTS, "-l", "ERROR"], {
    cwd: root,
    stdio: ["pipe", "pipe", "ignore"],
  });
  const server = Duplex.from({ writable: child.stdin, readable: child.stdout });
  const stream = filterSftp(server, containerPolicy(root, { maxFileBytes: 10 }));
  t.teardown(() => stream.destroy());
  const sftp = client(stream);
  t.equal((await sftp.init())[0], 2, "VERSION");

  const handle = await sftp.open("data.bin");
  if (!Buffer.isBuffer(handle)) throw new Error(`open answered ${handle}`);
  t.equal(await sftp.write(handle, 0, Buffer.from("0123456789")), OK, "up to the limit");
  t.equal(await sftp.write(handle, 5, Buffer.from("567890")), DENIED, "past the limit");
  t.equal(await sftp.close(handle), OK);
  t.equal(readFileSync(path.join(root, "data.bin"), "utf8"), "0123456789");

  t.equal(await sftp.open("../escaped"), DENIED);
  t.equal(await sftp.open(path.join(dir, "escaped")), DENIED);
  t.equal(await sftp.stat("sub/../../root"), DENIED, ".. outside realpath");
  t.equal(await sftp.mkdir("/tmp/rlark-sftp-policy-escape"), DENIED);
  t.equal(await sftp.symlink("/etc", "link"), DENIED, "no links are made");
  t.equal(await sftp.realpath(".."), DENIED);
  t.equal(await sftp.realpath("sub/.."), root, "cd .. inside the root");
  t.equal(
    await sftp.stat("etc-link/hostname"),
    DENIED,
    "a symlink there pointing out: resolved by the server",
  );
  t.equal(await sftp.stat("etc-link"), DENIED);
  t.equal(await sftp.lstat("etc-link"), "attrs", "the link itself is inside");
  t.equal(await sftp.stat("sub-link"), "attrs", "a symlink pointing inside");
  t.equal(await sftp.mkdir("sub-link/made"), OK);
  t.ok(statSync(path.join(root, "sub/made")).isDirectory());
  t.equal(await sftp.mkdir("etc-link/made"), DENIED, "a parent leading out");
  t.equal(
    await sftp.stat("missing/deeper"),
    2,
    "a path that does not resolve fails in the server: no such file",
  );
  t.equal(await sftp.remove("etc-link"), OK, "removing the link removes no target");
  t.equal(await sftp.stat(notUtf8("", "/hostname")), DENIED, "a name that is not UTF-8");
  t.equal(await sftp.raw(Buffer.from([4])), DENIED, "a CLOSE without an id");
  t.equal(await sftp.stat("sub"), "attrs", "the session goes on");
  t.ok(statSync("/etc").isDirectory());
  t.throws(() => statSync(path.join(dir, "escaped")));
});

t.test("the local policy follows symlinks on this machine", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-sftp-policy-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  symlinkSync("/etc", path.join(dir, "etc-link"));
  symlinkSync("/etc", notUtf8(dir));
  const stream = await startFiles(dir, { maxFileBytes: 10 });
  t.teardown(() => stream.destroy());
  const sftp = client(stream);
  await sftp.init();
  t.equal(await sftp.stat("etc-link/hostname"), DENIED);
  t.equal(await sftp.stat(notUtf8("", "/hostname")), DENIED, "a name that is not UTF-8");
  const handle = await sftp.open("data.bin");
  if (!Buffer.isBuffer(handle)) throw new Error(`open answered ${handle}`);
  t.equal(await sftp.write(handle, 8, Buffer.from("abc")), DENIED, "past the limit");
  t.equal(await sftp.close(handle), OK);
});

t.test("refusals wait for the client to read them, as the server's answers do", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-sftp-policy-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const stream = await startFiles(dir);
  t.teardown(() => stream.destroy());
  const name = Buffer.from("/etc");
  const one = Buffer.alloc(4 + 1 + 4 + 4 + name.length);
  one.writeUInt32BE(one.length - 4, 0);
  one.writeUInt8(17, 4); // STAT
  one.writeUInt32BE(name.length, 9);
  name.copy(one, 13);
  const count = 20_000;
  let taken = false;
  stream.write(Buffer.concat(Array.from({ length: count }, () => one)), () => {
    taken = true;
  });
  await waitFor(
    "the answers buffered",
    () => stream.readableLength >= stream.readableHighWaterMark,
    onRealServers,
  );
  t.notOk(taken, "the rest waits");
  t.ok(stream.readableLength < 2 * stream.readableHighWaterMark, `${stream.readableLength} bytes held`);
  let answers = 0;
  stream.on("data", (chunk: Buffer) => {
    answers += chunk.length;
  });
  await waitFor("every refusal answered", () => taken && answers >= count * 50, onRealServers);
});

// sftp-server exits at once when it cannot start (as for a uid with no passwd entry): the start
// fails with why, before any client is attached, and nothing is left running.
t.test("a server that exits before answering fails to start, with its exit", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-sftp-exit-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  await t.rejects(startFiles(dir, { sftpServer: "/bin/false" }), {
    message: /^sftp-server could not start \(exit status 1\)$/,
  });
  await t.rejects(startFiles(dir, { sftpServer: path.join(dir, "missing") }), {
    message: /^sftp-server could not start \(.*ENOENT.*\)$/,
  });
});
