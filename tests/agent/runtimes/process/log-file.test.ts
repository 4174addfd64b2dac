import { appendFileSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import t from "tap";
import { type OpenLog, readLogTail } from "../../../../operators/agent/runtimes/process/log-file.ts";
import { tempDir } from "./helpers.ts";

/** The real fs/promises open, counting every byte read through it. */
function countingOpen(): { open: OpenLog; bytesRead: () => number } {
  let total = 0;
  return {
    bytesRead: () => total,
    open: async (path) => {
      const handle = await open(path, "r");
      return {
        stat: () => handle.stat(),
        close: () => handle.close(),
        read: async (buffer, offset, length, position) => {
          const result = await handle.read(buffer, offset, length, position);
          total += result.bytesRead;
          return result;
        },
      };
    },
  };
}

t.test("the tail spans the previous file and the live one, oldest first", async (t) => {
  const dir = tempDir(t);
  const log = join(dir, "output.log");
  appendFileSync(`${log}.1`, "1\n2\n3\n");
  appendFileSync(log, "4\n5\n");
  t.equal(await readLogTail(log), "1\n2\n3\n4\n5\n");
  t.equal(await readLogTail(log, { tail: 3 }), "3\n4\n5\n");
  t.equal(await readLogTail(log, { tail: 4 }), "2\n3\n4\n5\n");
  t.equal(await readLogTail(log, { tail: 0 }), "");
  t.equal(await readLogTail(join(dir, "missing.log"), { tail: 5 }), "");
});

t.test("a line cut by a rotation is joined again", async (t) => {
  const dir = tempDir(t);
  const log = join(dir, "output.log");
  writeFileSync(`${log}.1`, "first\nsec");
  writeFileSync(log, "ond\nthird");
  t.equal(await readLogTail(log, { tail: 2 }), "second\nthird");
});

t.test("the tail of a large file reads only its end", async (t) => {
  const dir = tempDir(t);
  const log = join(dir, "output.log");
  const line = `${"x".repeat(99)}\n`;
  writeFileSync(log, line.repeat(200_000)); // 20 MB
  appendFileSync(log, "the end\n");
  const reader = countingOpen();
  t.equal(await readLogTail(log, { tail: 3, open: reader.open }), `${line}${line}the end\n`);
  t.ok(reader.bytesRead() <= 128 * 1024, `read ${reader.bytesRead()} bytes of 20 MB`);
});

t.test("a tail is capped in bytes and lines, and starts on a whole line", async (t) => {
  const dir = tempDir(t);
  const log = join(dir, "output.log");
  const line = `${"y".repeat(999)}\n`;
  writeFileSync(`${log}.1`, line.repeat(3_000));
  writeFileSync(log, line.repeat(3_000));
  const reader = countingOpen();
  const text = await readLogTail(log, { tail: 100_000, open: reader.open });
  t.ok(text.length <= 1024 * 1024, "at most 1 MiB");
  t.ok(text.length > 1000 * 1000, "as much as the cap allows");
  t.ok(reader.bytesRead() <= 1024 * 1024, `read ${reader.bytesRead()} bytes`);
  t.ok(text.startsWith("y".repeat(999)), "no partial first line");
  t.equal(text.split("\n").length - 1, Math.floor(text.length / 1000));

  const small = `${"z".repeat(9)}\n`;
  writeFileSync(log, small.repeat(50_000));
  const lines = await readLogTail(log, { tail: 50_000 });
  t.equal(lines.split("\n").length - 1, 10_000, "at most 10,000 lines");
  t.equal(await readLogTail(log, { tail: 5, maxLines: 3 }), small.repeat(3));
});
