// The part of image pre-pull every runtime shares (operators/agent/runtimes/shared/image-pre-pull.ts):
// bounds on pulls at once and images per node, failures retried with doubling backoff, the
// message cleaned and cut, a pair no longer wanted aborted and forgotten. The pulls here are
// promises the test settles: what a runtime pulls with is tested on real nodes and a real dockerd.
import t from "tap";
import {
  ImagePrePuller,
  MAX_PULL_MESSAGE,
} from "../../../../operators/agent/runtimes/shared/image-pre-pull.ts";
import { FakeClock } from "../../../../operators/lib/clock.ts";
import { waitFor } from "../../../helpers/wait-for.ts";

interface Call {
  node: string;
  image: string;
  signal: AbortSignal;
  resolve: () => void;
  reject: (error: Error) => void;
}

function harness(options: { concurrency?: number; maxImagesPerNode?: number } = {}) {
  const clock = new FakeClock();
  const calls: Call[] = [];
  let changes = 0;
  const puller = new ImagePrePuller({
    ...options,
    clock,
    backoff: { initialMs: 1000, maxMs: 4000 },
    onChange: () => changes++,
    // as the runtimes' pulls do, an abort ends the pull
    pull: (node, image, signal) =>
      new Promise<void>((resolve, reject) => {
        signal.addEventListener("abort", () => reject(new Error("aborted")));
        calls.push({ node, image, signal, resolve, reject });
      }),
  });
  const running = () => calls.filter((c) => !c.signal.aborted);
  return { clock, calls, puller, running, changes: () => changes };
}

const settled = () => new Promise((r) => setImmediate(r));

t.test("at most `concurrency` pulls run; the rest wait as Pulling", async (t) => {
  const h = harness({ concurrency: 2 });
  h.puller.want(new Map([["n1", ["a:1", "b:1", "c:1"]]]));
  t.equal(h.calls.length, 2, "two pulls started");
  t.same(
    h.puller.images("n1")?.map((i) => [i.image, i.phase]),
    [
      ["a:1", "Pulling"],
      ["b:1", "Pulling"],
      ["c:1", "Pulling"],
    ],
  );
  h.calls[0]?.resolve();
  await waitFor("the third pull started once one ended", async () => h.calls.length === 3);
  t.equal(h.puller.images("n1")?.[0]?.phase, "Present");
  t.equal(h.puller.images("n2"), undefined, "a node with nothing wanted has no entry");
  await h.puller.stop();
});

t.test("images beyond the per-node bound, or with an oversized reference, are not followed", async (t) => {
  const h = harness({ concurrency: 10, maxImagesPerNode: 2 });
  h.puller.want(new Map([["n1", ["c:1", "a:1", "b:1", "a:1", `${"x".repeat(600)}:1`]]]));
  t.same(
    h.puller.images("n1")?.map((i) => i.image),
    ["a:1", "b:1"],
  );
  await h.puller.stop();
});

t.test(
  "a failure is kept with the runtime's message, cleaned and cut, and retried with backoff",
  async (t) => {
    const h = harness();
    h.puller.want(new Map([["n1", ["bad:1"]]]));
    h.calls[0]?.reject(new Error(`ErrImagePull: no\u001b[31m registry\n${"y".repeat(5000)}`));
    await waitFor("Failed", async () => h.puller.images("n1")?.[0]?.phase === "Failed");
    const failed = h.puller.images("n1")?.[0];
    t.equal(failed?.attempts, 1);
    t.equal(failed?.message?.length, MAX_PULL_MESSAGE, "cut to the schema's bound");
    t.match(failed?.message, /^ErrImagePull: no \[31m registry y+…$/, "control characters gone");
    h.clock.advance(999);
    t.equal(h.calls.length, 1, "not retried before the backoff");
    h.clock.advance(1);
    t.equal(h.calls.length, 2, "retried after 1 s");
    t.equal(h.puller.images("n1")?.[0]?.phase, "Pulling");
    h.calls[1]?.reject(new Error("still no registry"));
    await waitFor("Failed again", async () => h.puller.images("n1")?.[0]?.attempts === 2);
    h.clock.advance(1999);
    t.equal(h.calls.length, 2, "the second wait is doubled");
    h.clock.advance(1);
    t.equal(h.calls.length, 3);
    h.calls[2]?.resolve();
    await waitFor("Present at last", async () => h.puller.images("n1")?.[0]?.phase === "Present");
    t.match(h.puller.images("n1")?.[0], { attempts: 0, message: undefined });
    await h.puller.stop();
  },
);

t.test("a pair no longer wanted is aborted and forgotten; its late answer changes nothing", async (t) => {
  const h = harness();
  h.puller.want(
    new Map([
      ["n1", ["a:1"]],
      ["n2", ["a:1"]],
    ]),
  );
  t.equal(h.calls.length, 2);
  const before = h.changes();
  h.puller.want(new Map([["n2", ["a:1"]]]));
  t.ok(h.calls[0]?.signal.aborted, "n1's pull aborted");
  t.notOk(h.calls[1]?.signal.aborted, "n2's goes on");
  t.equal(h.puller.images("n1"), undefined);
  t.ok(h.changes() > before, "the change is told");
  h.calls[0]?.resolve();
  await settled();
  t.equal(h.puller.images("n1"), undefined, "the aborted pull's answer is dropped");
  await h.puller.stop();
  t.ok(h.calls[1]?.signal.aborted, "stop aborts what runs");
});
