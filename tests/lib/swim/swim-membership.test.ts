import t, { type Test } from "tap";
import { suspicionTimeoutMs, swimParams } from "../../../operators/lib/swim/index.ts";
import { type GroupMember, startGroup, stateOf, TEST_PARAMS } from "./swim-group.ts";

const N = 20;
const params = swimParams(TEST_PARAMS);

async function converged(t: Test) {
  const group = startGroup(t);
  for (let i = 0; i < N; i++) await group.add(`node-${String(i).padStart(2, "0")}`);
  const all = () => group.members.every((m) => m.member.summary().alive === N);
  t.ok(await group.runUntil(all, 60_000), `all ${N} members see ${N} alive`);
  return group;
}

t.test("20 members on real UDP sockets converge: each sees all 20 alive, and nobody dead", async (t) => {
  const group = await converged(t);
  for (const m of group.members)
    t.same(m.member.summary(), { alive: N, suspect: 0, dead: 0, left: 0 }, m.member.id);
  t.notOk(
    group.members.some((m) => m.seen.some((s) => s.state === "dead")),
    "no member was ever declared dead",
  );
});

t.test(
  "a killed member is declared dead by every other within the suspicion time of its suspicion",
  async (t) => {
    const group = await converged(t);
    const victim = group.members[7] as GroupMember;
    const others = group.members.filter((m) => m !== victim);
    const killedAt = group.clock.now();
    await group.kill(victim);
    const timeout = suspicionTimeoutMs(params, N);
    // Round-robin probing reaches every member within N - 1 periods, so each member suspects the
    // victim within N periods of its death at the latest, and declares it dead one suspicion timeout on.
    const bound = (N + 1) * params.probeIntervalMs + timeout;
    const allDead = () => others.every((m) => stateOf(m, victim.member.id) === "dead");
    t.ok(
      await group.runUntil(allDead, bound),
      `every member holds ${victim.member.id} dead within ${bound} ms`,
    );
    for (const m of others) {
      const events = m.seen.filter((s) => s.id === victim.member.id && s.at >= killedAt);
      const suspect = events.find((s) => s.state === "suspect");
      const dead = events.find((s) => s.state === "dead");
      t.ok(dead, `${m.member.id} declared it dead`);
      // A member that suspected it waits at most the suspicion timeout (less when the others' verdict
      // reaches it first); the first declaration anywhere is exactly one timeout after a suspicion.
      if (suspect && dead)
        t.ok(
          dead.at - suspect.at <= timeout,
          `${m.member.id}: dead ${dead.at - suspect.at} ms after suspect`,
        );
    }
    const first = Math.min(
      ...others.map(
        (m) => m.seen.find((s) => s.id === victim.member.id && s.state === "dead")?.at ?? Infinity,
      ),
    );
    const firstSuspect = Math.min(
      ...others.map(
        (m) =>
          m.seen.find((s) => s.id === victim.member.id && s.state === "suspect" && s.at >= killedAt)?.at ??
          Infinity,
      ),
    );
    t.ok(
      first - firstSuspect >= timeout,
      "nobody declared it dead before a full suspicion timeout had passed",
    );
    t.ok(
      others.every((m) => m.member.summary().alive === N - 1),
      "the rest stay alive",
    );
  },
);

t.test(
  "a member paused for less than the suspicion time is suspected, refutes, and is never declared dead",
  async (t) => {
    const group = await converged(t);
    const paused = group.members[3] as GroupMember;
    const id = paused.member.id;
    const pausedAt = group.clock.now();
    t.ok(
      3 * params.probeIntervalMs < suspicionTimeoutMs(params, N),
      "the pause is shorter than the suspicion time",
    );
    paused.paused = true;
    await group.run(3 * params.probeIntervalMs);
    paused.paused = false;
    await group.run(suspicionTimeoutMs(params, N) + 5 * params.probeIntervalMs);
    const others = group.members.filter((m) => m !== paused);
    t.ok(
      others.some((m) => m.seen.some((s) => s.id === id && s.state === "suspect" && s.at >= pausedAt)),
      "the pause was noticed: someone suspected it",
    );
    t.notOk(
      group.members.some((m) => m.seen.some((s) => s.state === "dead")),
      "no member, the paused one or any other, was declared dead",
    );
    for (const m of others) t.equal(stateOf(m, id), "alive", `${m.member.id} holds it alive again`);
    t.ok(
      (others[0]?.member.members().find((m) => m.id === id)?.incarnation ?? 0) > 0,
      "it refuted with a higher incarnation",
    );
  },
);

t.test("a member with the wrong key is not admitted, and hears nothing it can read", async (t) => {
  const group = startGroup(t);
  for (let i = 0; i < 3; i++) await group.add(`node-${i}`);
  const intruder = await group.add("intruder", "another-secret");
  await group.run(10 * params.probeIntervalMs);
  for (const m of group.members.slice(0, 3)) {
    t.notOk(
      m.member.members().some((x) => x.id === "intruder"),
      `${m.member.id} does not list it`,
    );
    t.same(m.member.summary(), { alive: 3, suspect: 0, dead: 0, left: 0 });
  }
  t.ok((group.members[0]?.member.dropped ?? 0) > 0, "its join reached the seed, which dropped it unread");
  t.same(
    intruder.member.members().map((m) => m.id),
    ["intruder"],
    "it knows no member",
  );
});

t.test("a member that leaves is held left, not dead", async (t) => {
  const group = startGroup(t);
  for (let i = 0; i < 5; i++) await group.add(`node-${i}`);
  t.ok(await group.runUntil(() => group.members.every((m) => m.member.summary().alive === 5), 30_000));
  const leaving = group.members[2] as GroupMember;
  leaving.open = false;
  await leaving.member.leave();
  await group.run(suspicionTimeoutMs(params, 5) + 5 * params.probeIntervalMs);
  for (const m of group.members.filter((x) => x !== leaving))
    t.equal(stateOf(m, leaving.member.id), "left", m.member.id);
});
