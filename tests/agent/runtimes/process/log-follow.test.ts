import { appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Readable } from "node:stream";
import t from "tap";
import { logStream } from "../../../../operators/agent/runtimes/process/log-follow.ts";
import { RotatingLog, trimOversized } from "../../../../operators/agent/runtimes/process/log-writer.ts";
import { waitFor } from "../../../helpers/wait-for.ts";
import { tempDir } from "./helpers.ts";

/** Everything a stream has given so far, collected as it flows. */
function collect(stream: Readable): { text: () => string; ended: Promise<void> } {
  let text = "";
  stream.on("data", (chunk: Buffer) => {
    text += chunk.toString("utf8");
  });
  const ended = new Promise<void>((resolve, reject) => {
    stream.once("end", resolve);
    stream.once("close", resolve);
    stream.once("error", reject);
  });
  return { text: () => text, ended };
}

const numbered = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => `line-${from + i}\n`).join("");

t.test("a snapshot is the tail and then the end", async (t) => {
  const log = join(tempDir(t), "output.log");
  writeFileSync(log, numbered(0, 10));
  const out = collect(logStream(log, {}, { tail: 2 }));
  await out.ended;
  t.equal(out.text(), "line-8\nline-9\n");
});

t.test("limitBytes caps the snapshot and the follow together", async (t) => {
  const log = join(tempDir(t), "output.log");
  writeFileSync(log, numbered(0, 3));
  const stream = logStream(log, {}, { tail: 3, limitBytes: 25, follow: true, pollMs: 5 });
  t.teardown(() => stream.destroy());
  const out = collect(stream);
  await waitFor("the tail", () => out.text() === numbered(0, 3));
  appendFileSync(log, numbered(3, 10));
  await out.ended;
  t.equal(out.text(), numbered(0, 10).slice(0, 25), "the tail, then appended bytes up to the cap");
});

t.test("a follow carries on across rotations: nothing lost, nothing repeated", async (t) => {
  const dir = tempDir(t);
  const log = join(dir, "output.log");
  const writer = new RotatingLog(log, 200);
  writer.write(Buffer.from(numbered(0, 5)));
  const stream = logStream(log, {}, { tail: 2, follow: true, pollMs: 5 });
  t.teardown(() => stream.destroy());
  const out = collect(stream);
  await waitFor("the tail", () => out.text() === "line-3\nline-4\n");
  // Each 200-byte file holds ~25 lines: 200 lines rotate about eight times, while the follower reads.
  // Each batch waits for the follower, so at most one rotation falls between two of its looks
  // (a follower slower than two whole files loses the oldest by design: the disk is bounded).
  for (let i = 5; i < 205; i += 10) {
    writer.write(Buffer.from(numbered(i, i + 10)));
    await waitFor("the follower caught up", () => out.text().includes(`line-${i + 9}\n`), {
      attempts: 2000,
      everyMs: 2,
    });
  }
  writer.close();
  await waitFor("every line", () => out.text().includes("line-204\n"), { attempts: 2000 });
  t.equal(out.text(), numbered(3, 205), "every line once, in order");
  stream.destroy();
  await out.ended;
});

t.test("a follow that finds its file trimmed reads it again from the start", async (t) => {
  const log = join(tempDir(t), "output.log");
  writeFileSync(log, numbered(0, 50));
  const stream = logStream(log, {}, { tail: 1, follow: true, pollMs: 5 });
  t.teardown(() => stream.destroy());
  const out = collect(stream);
  await waitFor("the tail", () => out.text() === "line-49\n");
  trimOversized(log, 10);
  appendFileSync(log, "after-trim\n");
  await waitFor("the new output", () => out.text().endsWith("after-trim\n"), { attempts: 2000 });
  t.equal(out.text(), "line-49\nafter-trim\n");
});

t.test("a follow waits for a file that is not there yet", async (t) => {
  const log = join(tempDir(t), "output.log");
  const stream = logStream(log, {}, { follow: true, pollMs: 5 });
  t.teardown(() => stream.destroy());
  const out = collect(stream);
  writeFileSync(log, "first\n");
  await waitFor("the first line", () => out.text() === "first\n", { attempts: 2000 });
  t.pass();
});
