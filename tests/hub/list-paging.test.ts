// The objects API's paged lists (operators/hub/http/list-page.ts) on a real hub: its SQLite store
// and its HTTP API over a socket. `limit` and `continue` as Kubernetes has them, the server-side
// filters the dashboard uses, and the 400s a bad page request gets.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { type Hub, startHub } from "../../operators/hub/hub.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import type { BatchOp, KubeObject } from "../../operators/lib/store/index.ts";

const JOBS = "/api/v1/rlinf.io/v1alpha1/jobs";
const PHASES = ["Pending", "Running", "Succeeded", "Failed"];

// One hub for every test here (a hub takes seconds to start): each test reads what the store holds
// when it runs, so the Jobs and Teams the others add change no expectation.
let shared: Hub | undefined;
t.before(async () => {
  const dataDir = await mkdtemp(path.join(tmpdir(), "rlark-list-paging-"));
  shared = await startHub({
    dataDir,
    http: "127.0.0.1:0",
    ssh: "127.0.0.1:0",
    logger: silentLogger,
    controllers: () => [],
  });
  t.teardown(async () => {
    await shared?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  const ops: BatchOp[] = [];
  for (let i = 0; i < 300; i++)
    ops.push({ op: "create", object: job(`job-${String(i).padStart(4, "0")}`, i) });
  await shared.store.applyBatch(ops);
});
const theHub = (): Hub => shared!;

function job(name: string, i: number, team?: string): KubeObject {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Job",
    metadata: { name },
    spec: { tasks: [], ...(team ? { team } : {}) },
    // Every fifth Job has no phase yet: the API counts it as Pending, as the dashboard shows it.
    status:
      i % 5 === 4
        ? {}
        : {
            phase: PHASES[i % PHASES.length],
            tasks: [{ name: "a", cluster: `cluster-${i % 3}`, phase: "Running" }],
          },
  };
}

interface ListBody {
  metadata: { continue?: string; resourceVersion: string };
  items: KubeObject[];
  message?: string;
  reason?: string;
}

async function get(hub: Hub, query: string, token: string | null = hub.adminToken) {
  const response = await fetch(`${hub.url}${JOBS}${query}`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  return { status: response.status, body: (await response.json()) as ListBody };
}

/** Every page of a query, in order; `between` runs after each page (concurrent writes). */
async function walk(hub: Hub, query: URLSearchParams, between?: (page: number) => Promise<void>) {
  const pages: string[][] = [];
  let next: string | undefined;
  do {
    const q = new URLSearchParams(query);
    if (next) q.set("continue", next);
    const { status, body } = await get(hub, `?${q}`);
    if (status !== 200) throw new Error(`page ${pages.length}: ${status} ${body.message}`);
    pages.push(body.items.map((o) => o.metadata.name));
    next = body.metadata.continue;
    await between?.(pages.length);
  } while (next);
  return pages;
}

t.test(
  "paging returns every Job exactly once while Jobs are created and deleted between pages",
  async (t) => {
    const hub = theHub();
    const before = new Set((await hub.store.list("Job")).items.map((o) => o.metadata.name));
    const deleted = new Set<string>();
    let made = 0;
    const pages = await walk(hub, new URLSearchParams({ limit: "37" }), async (page) => {
      // New Jobs land before, inside and after the pages read so far; some not yet read go away.
      for (const name of [`job-0000a${page}`, `job-0150a${page}`, `job-9999-${page}`, `aaa-${page}`]) {
        await hub.store.create(job(name, made++));
      }
      const victim = `job-${String(150 + page * 10).padStart(4, "0")}`;
      if (page < 10 && !deleted.has(victim)) {
        await hub.store.delete("Job", undefined, victim);
        deleted.add(victim);
      }
    });
    const seen = pages.flat();
    t.equal(new Set(seen).size, seen.length, "no Job is returned twice");
    const missing = [...before].filter((name) => !deleted.has(name) && !seen.includes(name));
    t.same(missing, [], "every Job that stayed for the whole walk is returned");
    t.ok(
      pages.slice(0, -1).every((p) => p.length === 37),
      "unfiltered pages are full until the last",
    );
    t.same(seen, [...seen].sort(), "the order is stable: by name");
    t.ok(
      seen.includes("job-9999-1"),
      "a Job created after the walk's position is seen when the walk gets there",
    );
  },
);

t.test("filters by phase, cluster and name prefix agree with the whole list, across pages", async (t) => {
  const hub = theHub();
  const all = (await hub.store.list("Job")).items;
  const cases: Array<[Record<string, string>, (o: KubeObject) => boolean]> = [
    [{ phase: "Pending" }, (o) => ((o.status as { phase?: string }).phase ?? "Pending") === "Pending"],
    [{ cluster: "cluster-1" }, (o) => JSON.stringify(o.status).includes('"cluster":"cluster-1"')],
    [{ namePrefix: "job-01" }, (o) => o.metadata.name.startsWith("job-01")],
    [
      { phase: "Running", cluster: "cluster-2", namePrefix: "job-0" },
      (o) =>
        (o.status as { phase?: string }).phase === "Running" &&
        JSON.stringify(o.status).includes('"cluster":"cluster-2"') &&
        o.metadata.name.startsWith("job-0"),
    ],
  ];
  for (const [filters, expected] of cases) {
    const pages = await walk(hub, new URLSearchParams({ ...filters, limit: "7" }));
    t.same(
      pages.flat(),
      all.filter(expected).map((o) => o.metadata.name),
      `${new URLSearchParams(filters)}: ${pages.flat().length} Jobs in ${pages.length} pages`,
    );
    t.ok(
      pages.every((p) => p.length <= 7),
      "no page is larger than its limit",
    );
  }
});

t.test("the team filter follows spec.team, and the default Team for Jobs that name none", async (t) => {
  const hub = theHub();
  for (const [name, isDefault] of [
    ["vision", false],
    ["robots", true],
  ] as const)
    await hub.store.create({
      apiVersion: "rlinf.io/v1alpha1",
      kind: "Team",
      metadata: { name },
      spec: { members: ["carol"], ...(isDefault ? { default: true } : {}) },
    });
  await hub.store.create(job("a-vision", 0, "vision"));
  await hub.store.create(job("b-none", 1));
  await hub.store.create(job("c-robots", 2, "robots"));
  const team = async (name: string) =>
    (await walk(hub, new URLSearchParams({ team: name, limit: "100" }))).flat();
  t.same(await team("vision"), ["a-vision"]);
  // Every Job that names no team counts against the default one: the 300 of the other tests too.
  const robots = await team("robots");
  const all = (await hub.store.list("Job")).items.map((o) => o.metadata.name);
  t.same(
    robots,
    all.filter((name) => name !== "a-vision"),
  );
  t.ok(robots.includes("b-none") && robots.includes("c-robots"));
  t.same(await team("nobody"), []);
});

t.test("a bad page request is a 400 that names the parameter", async (t) => {
  const hub = theHub();
  const first = await get(hub, "?limit=5&phase=Running");
  t.ok(first.body.metadata.continue, "a first page of a longer list has a continue token");
  const refusals: Array<[string, RegExp]> = [
    ["?continue=not-a-token", /^continue: not a token this hub issued/],
    ["?limit=5&continue=%%%", /^continue: not a token this hub issued/],
    // A token made up by hand, in the shape a sealed one has, is still not one the hub issued.
    [
      `?limit=5&continue=${Buffer.from('{"v":1,"q":"x","ns":"","n":"job-0010"}').toString("base64url")}`,
      /^continue: not a token/,
    ],
    [`?limit=5&continue=${first.body.metadata.continue!.slice(0, -4)}AAAA`, /^continue: not a token/],
    [`?limit=5&continue=${first.body.metadata.continue}`, /^continue: the token belongs to another query/],
    [`?limit=5&phase=Failed&continue=${first.body.metadata.continue}`, /another query/],
    ["?limit=0", /^limit: "0" is not an integer from 1 to 1000/],
    ["?limit=1001", /^limit: /],
    ["?limit=ten", /^limit: /],
    ["?phase=", /^phase: /],
  ];
  for (const [query, message] of refusals) {
    const { status, body } = await get(hub, query);
    t.equal(status, 400, query);
    t.match(body.message ?? "", message, query);
  }
  // A bad label selector is refused as the whole list refuses it.
  const selector = await get(hub, "?limit=5&labelSelector=a%20in%20(");
  t.equal(selector.status, 422);
  t.match(selector.body.message, /^label selector "a in \(": /);
  const tasks = await fetch(`${hub.url}/api/v1/rlinf.io/v1alpha1/tasks?team=x`, {
    headers: { authorization: `Bearer ${hub.adminToken}` },
  });
  t.equal(tasks.status, 400);
  t.match(((await tasks.json()) as ListBody).message, /^team: only Jobs are filtered by team/);
  t.notMatch(
    Buffer.from(first.body.metadata.continue!, "base64url").toString("latin1"),
    /job-/,
    "the token does not show the name it resumes after",
  );
  // The same token with the query it came from goes on.
  const second = await get(hub, `?limit=5&phase=Running&continue=${first.body.metadata.continue}`);
  t.equal(second.status, 200);
  t.notSame(
    second.body.items.map((o) => o.metadata.name),
    first.body.items.map((o) => o.metadata.name),
  );
});

t.test("a page needs a token like the whole list", async (t) => {
  const hub = theHub();
  const { status } = await get(hub, "?limit=1", null);
  t.equal(status, 401);
  const wrong = await get(hub, "?limit=1", "not-the-token");
  t.equal(wrong.status, 401);
});
