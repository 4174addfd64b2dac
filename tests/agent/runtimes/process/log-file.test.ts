import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { readLog, rotateIfLarge } from "../../../../operators/agent/runtimes/process/log-file.ts";
import { tempDir } from "./helpers.ts";

t.test("a log past its size limit rotates, keeping N files, newest as .1", async (t) => {
  const dir = tempDir(t);
  const log = join(dir, "output.log");
  const rotation = { maxBytes: 10, keep: 2 };
  for (const round of ["a", "b", "c", "d"]) {
    appendFileSync(log, `${round.repeat(15)}\n`);
    t.ok(rotateIfLarge(log, rotation), `round ${round} rotates`);
  }
  t.equal(readFileSync(log, "utf8"), "");
  t.equal(readFileSync(`${log}.1`, "utf8"), `${"d".repeat(15)}\n`);
  t.equal(readFileSync(`${log}.2`, "utf8"), `${"c".repeat(15)}\n`);
  t.notOk(existsSync(`${log}.3`), "no more than `keep` rotated files");
  appendFileSync(log, "x\n");
  t.notOk(rotateIfLarge(log, rotation), "a small log is left alone");
});

t.test("reading the tail spans rotated files in order", async (t) => {
  const dir = tempDir(t);
  const log = join(dir, "output.log");
  appendFileSync(`${log}.2`, "1\n2\n");
  appendFileSync(`${log}.1`, "3\n4\n");
  appendFileSync(log, "5\n");
  t.equal(readLog(log, 2), "1\n2\n3\n4\n5\n");
  t.equal(readLog(log, 2, 3), "3\n4\n5\n");
  t.equal(readLog(log, 2, 4), "2\n3\n4\n5\n");
  t.equal(readLog(log, 2, 0), "");
  t.equal(readLog(join(dir, "missing.log"), 2, 5), "");
});
