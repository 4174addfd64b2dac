// Test files running side by side take address blocks through claimNumber: two live claims never
// get the same number, and a claim left by a dead process is taken over.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { claimNumber } from "./claim-number.ts";

t.test("live claims differ; a full range says so; a dead holder's claim is taken over", async (t) => {
  const kind = `claim-test-${process.pid}`;
  const first = claimNumber(kind, 0, 2);
  const second = claimNumber(kind, 0, 2);
  t.not(first.value, second.value, "two live claims, two numbers");
  t.throws(() => claimNumber(kind, 0, 2), /every claim-test-\d+ in 0-1 is claimed by a live process/);
  second.release();
  const third = claimNumber(kind, 0, 2);
  t.equal(third.value, second.value, "a released number is free again");
  third.release();
  first.release();

  // A process that has exited (its pid is gone) left its claim behind.
  const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
    encoding: "utf8",
  }).stdout;
  writeFileSync(path.join(tmpdir(), "rlark-test-claims", `${kind}-0`), dead);
  writeFileSync(path.join(tmpdir(), "rlark-test-claims", `${kind}-1`), dead);
  const taken = claimNumber(kind, 0, 2);
  t.ok([0, 1].includes(taken.value), "taken over");
  taken.release();
  for (const n of [0, 1]) claimNumber(kind, n, n + 1).release();
});
