import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import t from "tap";
import type { Domain, IPAllocation } from "../../../operators/api/index.ts";
import { openCertificateAuthority } from "../../../operators/lib/pki/index.ts";
import { openSqliteStore, type Store } from "../../../operators/lib/store/index.ts";
import { waitFor } from "../../helpers/wait-for.ts";
import { domain, job, peers, pod, startDomainHarness, tempDataDir } from "./fixtures.ts";

const child = new URL("./crash-hub.ts", import.meta.url).pathname;
const DOMAINS = 12;
const PODS = 10;
const clusters = ["beijing", "shanghai", "shenzhen"];

/** The same objects in any data dir: Domains with a /28 (14 usable), one Job each, pods in three clusters. */
async function seed(dataDir: string): Promise<void> {
  openCertificateAuthority({ dataDir });
  const store = openSqliteStore({ dataDir });
  for (let d = 0; d < DOMAINS; d++) {
    await store.create(domain(`d${d}`, `10.${d}.0.0/28`));
    await store.create(job(`j${d}`, `d${d}`));
    // Pods arrive out of name order, as agents report them.
    for (let i = 0; i < PODS; i++) {
      const n = (i * 7) % PODS;
      await store.create(pod(clusters[n % 3] as string, `j${d}-w-${n}`, `j${d}`, n % 2 ? "actor" : "env"));
    }
  }
  await store.close();
}

async function allAllocated(store: Store): Promise<Map<string, IPAllocation[]> | undefined> {
  const { items } = await store.list<Domain>("Domain");
  if (items.length !== DOMAINS) return undefined;
  if (!items.every((d) => d.status?.ipAllocations?.length === PODS)) return undefined;
  for (const d of items) {
    const routed = [...(await peers(store, d.metadata.name)).values()].flatMap((p) => p.spec.pods ?? []);
    if (routed.length !== PODS) return undefined;
  }
  return new Map(items.map((d) => [d.metadata.name, d.status?.ipAllocations ?? []]));
}

t.test("kill -9 of the hub mid-allocation: after restart the allocations are identical", async (t) => {
  // What an uninterrupted hub allocates from the same objects.
  const referenceDir = tempDataDir(t);
  await seed(referenceDir);
  const reference = await startDomainHarness(t, referenceDir);
  const expected = await waitFor("reference allocations", () => allAllocated(reference.store), {
    attempts: 4000,
  });
  await reference.stop();

  const dataDir = tempDataDir(t);
  await seed(dataDir);
  const proc = spawn(process.execPath, [child, dataDir, String(PODS)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    proc.on("exit", (_code, signal) => resolve(signal)),
  );
  const seen = new Map<string, string>();
  for await (const line of createInterface({ input: proc.stdout })) {
    const m = /^allocated (\S+) (.*)$/.exec(line);
    if (m) seen.set(m[1] as string, m[2] as string);
    if (seen.size === 3) proc.kill("SIGKILL");
  }
  t.equal(await exited, "SIGKILL", "the hub was killed");
  t.ok(
    seen.size >= 3 && seen.size < DOMAINS,
    `killed part-way: ${seen.size} of ${DOMAINS} Domains allocated`,
  );

  const restarted = await startDomainHarness(t, dataDir);
  const after = await waitFor("allocations after restart", () => allAllocated(restarted.store), {
    attempts: 4000,
  });
  for (const [name, json] of seen)
    t.same(after.get(name), JSON.parse(json), `${name}: what was seen before the kill`);
  t.same([...after], [...expected], "every Domain allocates exactly as an uninterrupted hub");
  for (const [name, list] of after) {
    const ips = list.map((a) => a.ip);
    t.equal(new Set(ips).size, ips.length, `${name}: no address twice`);
  }
});
