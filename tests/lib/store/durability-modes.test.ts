import { statSync } from "node:fs";
import t from "tap";
import { openSqliteStore } from "../../../operators/lib/store/index.ts";
import { Collector, job, settle, tempDir, tempStore } from "./helpers.ts";

/** An fdatasync that waits until the test lets it finish (or fail). */
function heldSync() {
  const held: ((error: NodeJS.ErrnoException | null) => void)[] = [];
  return {
    held,
    fdatasync(_fd: number, callback: (error: NodeJS.ErrnoException | null) => void) {
      held.push(callback);
    },
    release(error: NodeJS.ErrnoException | null = null) {
      const callback = held.shift();
      if (!callback) throw new Error("no sync is waiting");
      callback(error);
    },
  };
}

async function turns(n = 10): Promise<void> {
  for (let i = 0; i < n; i++) await settle();
}

t.test(
  "a write is acknowledged, and its event delivered, only after a WAL sync that covers it",
  async (t) => {
    const sync = heldSync();
    const { store } = tempStore(t, { fdatasync: sync.fdatasync });
    const c = new Collector();
    await store.watch("Job", {}, c.handler);
    let acked = false;
    const first = store.create(job("a")).then(() => {
      acked = true;
    });
    await turns();
    t.equal(sync.held.length, 1, "one sync started");
    t.notOk(acked, "not acknowledged before the sync");
    t.same(c.events, [], "no event before the sync");
    t.ok(await store.get("Job", "", "a"), "committed, so readable");
    // Writes made while a sync runs wait for the next one, which covers them all.
    const later = [store.create(job("b")), store.create(job("c"))];
    await turns();
    t.equal(sync.held.length, 1, "the next sync waits for the running one");
    sync.release();
    await first;
    await turns();
    t.equal(sync.held.length, 1, "the second sync covers both later writes");
    t.same(c.summary(), ["ADDED a@1"]);
    sync.release();
    await Promise.all(later);
    await c.until(3);
    t.same(c.summary(), ["ADDED a@1", "ADDED b@2", "ADDED c@3"]);
  },
);

t.test("a watch started while a sync runs does not see that commit twice", async (t) => {
  const sync = heldSync();
  const { store } = tempStore(t, { fdatasync: sync.fdatasync });
  const a = store.create(job("a"));
  await turns();
  sync.release();
  await a;
  const b = store.create(job("b"));
  await turns();
  // b is committed but waits for its sync: the list (and the replay) already contain it.
  const fresh = new Collector();
  await store.watch("Job", {}, fresh.handler);
  const resumed = new Collector();
  await store.watch("Job", { resourceVersion: "1" }, resumed.handler);
  sync.release();
  await b;
  const c = store.create(job("c"));
  await turns();
  sync.release();
  await c;
  await fresh.until(3);
  await resumed.until(2);
  await turns();
  t.same(fresh.summary(), ["ADDED a@1", "ADDED b@2", "ADDED c@3"]);
  t.same(resumed.summary(), ["ADDED b@2", "ADDED c@3"]);
});

t.test("a failed WAL sync fails the writes it covered and every write after it", async (t) => {
  const sync = heldSync();
  const dir = tempDir(t);
  const store = openSqliteStore({ dataDir: dir, fdatasync: sync.fdatasync });
  const write = store.create(job("a"));
  await turns();
  const during = store.create(job("during")); // committed while the failing sync runs
  await turns();
  const queued = store.create(job("queued")); // not yet committed when it fails
  const eio = Object.assign(new Error("EIO: i/o error"), { code: "EIO" });
  sync.release(eio);
  await t.rejects(write, /syncing the WAL failed \(EIO: i\/o error\); restart/);
  await t.rejects(during, /syncing the WAL failed/);
  await t.rejects(queued, /syncing the WAL failed/);
  await t.rejects(store.create(job("b")), /syncing the WAL failed/);
  await store.close();
});

t.test("checkpoints keep the WAL small and lose nothing", async (t) => {
  const { store, dir } = tempStore(t, { checkpointBytes: 1 });
  for (let i = 0; i < 20; i++) await store.create(job(`j${i}`, { payload: "x".repeat(2000) }));
  t.equal(statSync(`${dir}/store.db-wal`).size, 0, "truncated after the last sync");
  await store.close();
  const reopened = openSqliteStore({ dataDir: dir });
  t.teardown(() => reopened.close());
  t.equal((await reopened.list("Job")).items.length, 20);
});

t.test("inline durability (synchronous=FULL inside COMMIT) keeps the same semantics", async (t) => {
  const { store, dir } = tempStore(t, { durability: "inline" });
  const c = new Collector();
  await store.watch("Job", {}, c.handler);
  const [a] = await Promise.all([store.create(job("a")), store.create(job("b"))]);
  await store.update({ ...a, spec: { n: 1 } });
  await c.until(3);
  t.same(c.summary(), ["ADDED a@1", "ADDED b@2", "MODIFIED a@3"]);
  await store.close();
  const reopened = openSqliteStore({ dataDir: dir });
  t.teardown(() => reopened.close());
  t.same((await reopened.get("Job", "", "a"))?.spec, { n: 1 });
});
