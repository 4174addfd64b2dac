import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import t from "tap";
import { openSqliteStore } from "../../../operators/lib/store/index.ts";
import { tempDir } from "./helpers.ts";

const writer = new URL("./crash-writer.ts", import.meta.url).pathname;

for (const durability of ["pipelined", "inline"]) {
  t.test(`kill -9 of a writing process loses no acknowledged write (${durability})`, async (t) => {
    const dir = tempDir(t);
    const child = spawn(process.execPath, [writer, dir, durability], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const acked: string[] = [];
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on("exit", (_code, signal) => resolve(signal)),
    );
    for await (const line of createInterface({ input: child.stdout })) {
      if (line.startsWith("ack ")) acked.push(line.slice(4));
      if (acked.length === 400) child.kill("SIGKILL");
    }
    t.equal(await exited, "SIGKILL");
    t.ok(acked.length >= 400);

    const store = openSqliteStore({ dataDir: dir });
    t.teardown(() => store.close());
    const names = new Set((await store.list("Job")).items.map((o) => o.metadata.name));
    const lost = acked.filter((name) => !names.has(name));
    t.same(lost, [], "every acknowledged Job is there");
    const tasks = new Set((await store.list("Task")).items.map((o) => o.metadata.name));
    t.ok(
      [...tasks].every((name) => names.has(name)),
      "batches are atomic: no Task without its Job",
    );
    const rv = Number(await store.resourceVersion());
    t.equal(rv, names.size + tasks.size, "the resourceVersion counter matches the writes that committed");
    const more = await store.create({ apiVersion: "v1", kind: "Job", metadata: { name: "after-crash" } });
    t.equal(more.metadata.resourceVersion, String(rv + 1));
  });
}
