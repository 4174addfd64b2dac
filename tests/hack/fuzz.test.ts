// `npm test` fuzzes every parser at the trust boundary (hack/fuzz/run, 5,000 inputs a target, a
// fresh seed each run, printed): no crash, no hang. And the harness itself catches each kind of
// failure: a target that crashes, one that hangs and one that leaks are reported as such, with
// the seed to replay them.
import { spawn } from "node:child_process";
import { join } from "node:path";
import t from "tap";

const root = join(import.meta.dirname, "../..");

function run(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; out: string }> {
  const child = spawn("bash", [join(root, "hack/fuzz/run"), ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (c: Buffer) => {
    out += c.toString("utf8");
  });
  child.stderr.on("data", (c: Buffer) => {
    out = `${out}${c.toString("utf8")}`.slice(-200_000);
  });
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, out })));
}

t.test("every target takes 5,000 inputs without a crash or a hang", async (t) => {
  const { code, out } = await run([]);
  const lines = out.trim().split("\n");
  const last = lines.at(-1) ?? "";
  const targets = Number(/(\d+) targets/.exec(out)?.[1]);
  t.ok(targets >= 16, `the run covers every target (${targets})`);
  const expected = `fuzz: ${targets * 5000} inputs, 0 crashes, 0 hangs`;
  t.equal(last, expected, "the last line counts every input, no crash and no hang");
  if (last !== expected) t.comment(out.slice(-8000));
  t.equal(code, 0, "the run succeeds");
});

t.test("a crash, a hang and a leak are each found and reported with their seed", async (t) => {
  const { code, out } = await run(["--inputs", "40", "--seed", "5", "--timeout-ms", "1000"], {
    RLARK_FUZZ_SELF_TEST: "1",
  });
  t.equal(code, 1, "the run fails");
  t.match(
    out,
    /fuzz: self-test-crash: crash at input \d+ \(replay: hack\/fuzz\/run --seed 5 --inputs 40 --target self-test-crash\)/,
  );
  t.match(out, /TypeError: Cannot read properties of undefined/);
  t.match(out, /fuzz: self-test-hang: hang at input 3 .*\n {2}no answer within 1000 ms/);
  t.match(out, /fuzz: self-test-leak: crash at input 40 .*\n {2}the heap grew by \d+ MB over the run/);
  t.match(out, /fuzz: self-test-refusal: 40 inputs, 0 crashes, 0 hangs/, "a clear refusal is no crash");
  // 20 odd inputs crash, the leak is one more
  t.equal(out.trim().split("\n").at(-1), "fuzz: 160 inputs, 21 crashes, 1 hangs");
});
