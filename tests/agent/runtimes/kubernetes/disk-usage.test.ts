// Disk use from a kubelet Stats Summary: nodefs plus a separate imagefs, one filesystem counted once.
import t from "tap";
import { diskUsageFromSummary } from "../../../../operators/agent/runtimes/kubernetes/cluster/disk-usage.ts";

const GiB = 2 ** 30;
const fs = (capacity: number, available: number, used: number) => ({
  capacityBytes: capacity * GiB,
  availableBytes: available * GiB,
  usedBytes: used * GiB,
});

t.test("a separate imagefs is added to the nodefs", async (t) => {
  const summary = { node: { fs: fs(100, 60, 40), runtime: { imageFs: fs(200, 150, 50) } } };
  t.same(diskUsageFromSummary(summary), { usedBytes: 90 * GiB, totalBytes: 300 * GiB });
});

t.test("an imagefs on the nodefs's filesystem is counted once", async (t) => {
  const summary = { node: { fs: fs(100, 60, 40), runtime: { imageFs: fs(100, 60, 12) } } };
  t.same(diskUsageFromSummary(summary), { usedBytes: 40 * GiB, totalBytes: 100 * GiB });
});

t.test("a summary without a nodefs gives no figures rather than zeros", async (t) => {
  t.equal(diskUsageFromSummary({ node: { runtime: {} } }), undefined);
  t.equal(diskUsageFromSummary("not json"), undefined);
  t.same(diskUsageFromSummary({ node: { fs: fs(10, 5, 5) } }), { usedBytes: 5 * GiB, totalBytes: 10 * GiB });
});
