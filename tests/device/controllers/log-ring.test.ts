import t from "tap";
import { LogRing } from "../../../operators/device/controllers/log-ring.ts";

t.test("the ring keeps the last maxLines lines, each cut at maxLineBytes", async (t) => {
  const ring = new LogRing({ maxLines: 3, maxLineBytes: 5 });
  for (const text of ["one", "two", "three", "four", "a long line"]) ring.push("p", "stdout", text);
  t.same(
    ring.tail(10).map((l) => l.text),
    ["three", "four", "a lon…[truncated]"],
  );
  t.same(
    ring.tail(10).map((l) => l.seq),
    [3, 4, 5],
  );
  t.same(ring.tail(0), []);
});

t.test("a reader behind the ring learns how many lines it missed", async (t) => {
  const ring = new LogRing({ maxLines: 2, maxLineBytes: 100 });
  const heard: number[] = [];
  const unsubscribe = ring.subscribe(() => heard.push(ring.nextSeq - 1));
  for (const text of ["a", "b", "c", "d"]) ring.push("p", "stderr", text);
  unsubscribe();
  ring.push("p", "stderr", "e");
  t.same(heard, [1, 2, 3, 4], "subscribers hear each line until they unsubscribe");
  const { lines, dropped } = ring.since(2);
  t.equal(dropped, 2, "lines 2 and 3 fell out of the ring");
  t.same(
    lines.map((l) => l.text),
    ["d", "e"],
  );
  t.same(ring.since(6), { lines: [], dropped: 0 }, "a reader at the end waits for the next line");
});
