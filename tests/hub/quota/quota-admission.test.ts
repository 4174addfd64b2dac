// The pure core of admission (operators/controllers/quota/): what fits, what waits and why,
// whom borrowing gives back to, and fair sharing by weight over time on a fake clock.

import fc from "fast-check";
import t from "tap";
import type { Job, Team } from "../../../operators/api/index.ts";
import { QuotaLedger, usage } from "../../../operators/controllers/quota/index.ts";
import { FakeClock } from "../../../operators/lib/clock.ts";

function team(name: string, spec: Partial<Team["spec"]> & { gpus?: number; limit?: number } = {}): Team {
  const { gpus = 4, limit, ...rest } = spec;
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Team",
    metadata: { name },
    spec: {
      quota: [
        {
          resource: "nvidia.com/gpu",
          nominal: String(gpus),
          ...(limit !== undefined ? { borrowingLimit: String(limit) } : {}),
        },
      ],
      ...rest,
    },
  };
}

function job(name: string, teamName: string, gpus: number, nodeSelector?: Record<string, string>): Job {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Job",
    metadata: { name },
    spec: {
      team: teamName,
      tasks: [
        {
          name: "learner",
          role: "Actor",
          agentType: "Kubernetes",
          ...(nodeSelector ? { nodeSelector } : {}),
          kubernetes: {
            workload: {
              kind: "Deployment",
              replicas: gpus,
              template: {
                spec: {
                  containers: [
                    { name: "main", image: "x", resources: { requests: { "nvidia.com/gpu": "1" } } },
                  ],
                },
              },
            },
          },
        },
      ],
    },
  };
}

function ledgerOf(...teams: Team[]): QuotaLedger {
  const ledger = new QuotaLedger();
  for (const t of teams) ledger.setTeam(t);
  return ledger;
}

function admit(ledger: QuotaLedger, j: Job, now = 0) {
  const owner = ledger.teamOf(j);
  if (!owner) throw new Error(`no team for ${j.metadata.name}`);
  return ledger.admit(j, owner, now);
}

t.test("a team alone: admitted while it fits, then the shortfall in words", async (t) => {
  const ledger = ledgerOf(team("robots", { gpus: 6 }));
  t.match(admit(ledger, job("a", "robots", 4)), { admit: true, borrowing: false });
  t.same(admit(ledger, job("b", "robots", 4)), {
    admit: false,
    reason: "QuotaExceeded",
    message: "team robots needs 4 nvidia.com/gpu, 2 free",
    victims: [],
  });
  t.same(ledger.release("a"), ["b"], "quota given back wakes the waiting Job");
  t.match(admit(ledger, job("b", "robots", 4)), { admit: true });
});

t.test("a Job of no team, or of the default team", async (t) => {
  const ledger = ledgerOf(team("robots", { gpus: 1 }));
  const loose = job("free", "robots", 1);
  delete loose.spec.team;
  t.equal(ledger.teamOf(loose), undefined, "no default team: no quota applies");
  ledger.setTeam(team("robots", { gpus: 1, default: true }));
  t.equal(ledger.teamOf(loose)?.name, "robots");
});

t.test("a cohort lends idle quota up to the borrowing limit", async (t) => {
  const ledger = ledgerOf(
    team("robots", { gpus: 4, cohort: "lab", limit: 2 }),
    team("vision", { gpus: 4, cohort: "lab" }),
  );
  t.match(admit(ledger, job("a", "robots", 6)), { admit: true, borrowing: true });
  t.same(admit(ledger, job("b", "robots", 1)), {
    admit: false,
    reason: "QuotaExceeded",
    message: "team robots needs 1 nvidia.com/gpu, 0 free",
    victims: [],
  });
  t.match(admit(ledger, job("c", "vision", 2)), { admit: true, borrowing: false });
  t.match(admit(ledger, job("d", "vision", 1)), {
    admit: false,
    message: "team vision needs 1 nvidia.com/gpu, 0 free",
  });
});

t.test("taking nominal quota back preempts borrowers: lowest priority, then newest", async (t) => {
  const ledger = ledgerOf(
    team("robots", { gpus: 4, cohort: "lab" }),
    team("vision", { gpus: 2, cohort: "lab", priority: 1 }),
    team("speech", { gpus: 0, cohort: "lab" }),
  );
  t.match(admit(ledger, job("v-own", "vision", 2, undefined), 1), { admit: true, borrowing: false });
  t.match(admit(ledger, job("v-borrow", "vision", 1), 2), { admit: true, borrowing: true });
  t.match(admit(ledger, job("s-old", "speech", 1), 3), { admit: true, borrowing: true });
  t.match(admit(ledger, job("s-new", "speech", 1), 4), { admit: true, borrowing: true });
  // robots asks for 2 of its 4: the cohort of 6 has 1 idle; one Job must go: speech's (priority 0), the newest.
  const decision = admit(ledger, job("r", "robots", 2), 5);
  t.same(decision, {
    admit: false,
    reason: "Preempting",
    message:
      "team robots needs 2 nvidia.com/gpu, 1 free: taking its nominal quota back from s-new (borrowed in cohort lab)",
    victims: ["s-new"],
  });
  t.ok(ledger.isEvicting("s-new"));
  const again = admit(ledger, job("r", "robots", 2), 6);
  t.match(
    again,
    { admit: false, reason: "Preempting", victims: [] },
    "a second look waits for the same victim",
  );
  t.match(
    admit(ledger, job("late", "speech", 1), 7),
    { admit: false, reason: "FairShare", message: /taking borrowed quota back/ },
    "nobody borrows what is being taken back",
  );
  ledger.release("s-new");
  t.match(admit(ledger, job("r", "robots", 2), 8), { admit: true, borrowing: false });
  t.notOk(ledger.isEvicting("v-own"), "a Job within its team's nominal quota is never preempted");
});

t.test("beyond its nominal quota a team preempts nobody", async (t) => {
  const ledger = ledgerOf(
    team("robots", { gpus: 2, cohort: "lab" }),
    team("vision", { gpus: 2, cohort: "lab" }),
  );
  t.match(admit(ledger, job("v", "vision", 4)), { admit: true, borrowing: true });
  t.match(admit(ledger, job("r", "robots", 3)), { admit: false, reason: "QuotaExceeded", victims: [] });
  t.notOk(ledger.isEvicting("v"));
});

t.test("flavors: a task on a flavor's nodes counts against that flavor's line", async (t) => {
  const a100 = { "rlark.io/node-category-cloud": "true" };
  const ledger = ledgerOf({
    ...team("robots"),
    spec: {
      flavors: [{ name: "cloud", nodeLabels: a100 }],
      quota: [
        { resource: "nvidia.com/gpu", nominal: "1" },
        { resource: "nvidia.com/gpu", flavor: "cloud", nominal: "8" },
      ],
    },
  });
  t.match(admit(ledger, job("big", "robots", 8, a100)), { admit: true });
  t.match(admit(ledger, job("edge", "robots", 1)), { admit: true });
  t.match(admit(ledger, job("more", "robots", 1, a100)), {
    admit: false,
    message: "team robots needs 1 nvidia.com/gpu of flavor cloud, 0 free",
  });
});

t.test("idle capacity goes by weight over time (dominant resource fairness)", async (t) => {
  // pool lends 12 GPUs it does not use; heavy (weight 2) and light (weight 1) keep a backlog of
  // one-GPU Jobs that run 5 to 15 ticks. The ideal: heavy holds 8, light 4. Whoever comes first
  // takes all at the start; as Jobs end, the capacity moves to the share by weight.
  const clock = new FakeClock();
  const ledger = ledgerOf(
    team("pool", { gpus: 12, cohort: "lab" }),
    team("heavy", { gpus: 0, cohort: "lab", weight: 2 }),
    team("light", { gpus: 0, cohort: "lab", weight: 1 }),
  );
  const running = new Map<string, number>();
  let serial = 0;
  const backlog: Job[] = [];
  const sum = { heavy: 0, light: 0 };
  let samples = 0;
  for (let tick = 0; tick < 600; tick++) {
    for (const [name, end] of running) {
      if (end <= clock.now()) {
        running.delete(name);
        ledger.release(name);
      }
    }
    while (backlog.filter((j) => j.spec.team === "heavy").length < 20)
      backlog.push(job(`h${serial++}`, "heavy", 1));
    while (backlog.filter((j) => j.spec.team === "light").length < 20)
      backlog.push(job(`l${serial++}`, "light", 1));
    // Reconciles come in no particular order: light's Jobs first on odd ticks.
    const order = tick % 2 ? [...backlog].reverse() : [...backlog];
    for (const j of order) {
      if (admit(ledger, j, clock.now()).admit) {
        const ticks = 5 + ((Number(j.metadata.name.slice(1)) * 7) % 11);
        running.set(j.metadata.name, clock.now() + ticks * 1000);
        backlog.splice(backlog.indexOf(j), 1);
      }
    }
    if (tick >= 100) {
      const used = usage(ledger.state());
      sum.heavy += (used.get("heavy")?.["nvidia.com/gpu"] ?? 0) / 1000;
      sum.light += (used.get("light")?.["nvidia.com/gpu"] ?? 0) / 1000;
      samples++;
    }
    clock.advance(1000);
  }
  const heavy = sum.heavy / samples;
  const light = sum.light / samples;
  t.ok(Math.abs(heavy - 8) <= 0.5, `heavy holds ${heavy.toFixed(2)} of its ideal 8`);
  t.ok(Math.abs(light - 4) <= 0.5, `light holds ${light.toFixed(2)} of its ideal 4`);
});

t.test("on a cold start, idle capacity goes by weight: every Job seen counts as waiting", async (t) => {
  // pool lends 12 GPUs; heavy (weight 2) and light (weight 1) each bring 20 one-GPU Jobs in one
  // revision, reconciled light first. Without knowing heavy's Jobs wait, light would take all 12.
  const ledger = ledgerOf(
    team("pool", { gpus: 12, cohort: "lab" }),
    team("heavy", { gpus: 0, cohort: "lab", weight: 2 }),
    team("light", { gpus: 0, cohort: "lab", weight: 1 }),
  );
  const jobs = [
    ...Array.from({ length: 20 }, (_, i) => job(`l${i}`, "light", 1)),
    ...Array.from({ length: 20 }, (_, i) => job(`h${i}`, "heavy", 1)),
  ];
  for (const j of jobs) ledger.expect(j);
  // Passes until nothing changes, as the controller retries what waits.
  for (let pass = 0, changed = true; changed && pass < 50; pass++) {
    changed = false;
    for (const j of jobs) if (!ledger.isAdmitted(j.metadata.name) && admit(ledger, j).admit) changed = true;
  }
  const used = usage(ledger.state());
  t.equal((used.get("heavy")?.["nvidia.com/gpu"] ?? 0) / 1000, 8, "heavy holds its 8");
  t.equal((used.get("light")?.["nvidia.com/gpu"] ?? 0) / 1000, 4, "light its 4");
  const stopped = job("s", "heavy", 1);
  stopped.spec.stopped = true;
  ledger.expect(stopped);
  t.notOk(ledger.state().waiting.has("s"), "a stopped Job does not wait");
});

t.test("whatever the order of admissions and releases, no team and no cohort goes over", async (t) => {
  const teams = [
    team("a", { gpus: 3, cohort: "lab", limit: 2 }),
    team("b", { gpus: 2, cohort: "lab", weight: 3 }),
    team("c", { gpus: 4, cohort: "lab", priority: 2 }),
    team("solo", { gpus: 2 }),
  ];
  const step = fc.oneof(
    fc.record({
      op: fc.constant("admit" as const),
      team: fc.constantFrom("a", "b", "c", "solo"),
      gpus: fc.integer({ min: 1, max: 5 }),
    }),
    fc.record({ op: fc.constant("release" as const), index: fc.nat() }),
  );
  fc.assert(
    fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
      const ledger = ledgerOf(...teams);
      const admitted: string[] = [];
      steps.forEach((s, i) => {
        if (s.op === "admit") {
          const decision = admit(ledger, job(`j${i}`, s.team, s.gpus), i);
          if (decision.admit) admitted.push(`j${i}`);
        } else if (admitted.length > 0) {
          const [name] = admitted.splice(s.index % admitted.length, 1);
          ledger.release(name as string);
        }
        const { used: kept, ...rest } = ledger.state();
        const used = usage(rest);
        for (const [name, total] of used) {
          for (const [key, amount] of Object.entries(total)) {
            if ((kept?.get(name)?.[key] ?? 0) !== amount)
              throw new Error(`the ledger's running sum drifted at step ${i}`);
          }
        }
        const gpus = (name: string) => (used.get(name)?.["nvidia.com/gpu"] ?? 0) / 1000;
        if (gpus("a") > 5 || gpus("solo") > 2) throw new Error(`over a team's quota after step ${i}`);
        if (gpus("a") + gpus("b") + gpus("c") > 9) throw new Error(`over the cohort's quota after step ${i}`);
      });
    }),
  );
  t.pass("held for every generated sequence");
});
