import fc from "fast-check";
import t, { type Test } from "tap";
import {
  type AllocateInput,
  type AllocateResult,
  allocate,
  type Claim,
  claimKey,
  intToIp,
  ipToInt,
  parseCidr,
} from "../../../operators/controllers/domain/ipam.ts";

function claim(pod: string, job = "j", task = "t", cluster = "c1"): Claim {
  return { job, task, pod, cluster };
}

function ipOf(result: AllocateResult, pod: string): string | undefined {
  return result.allocations.find((a) => a.pod === pod)?.ip;
}

function next(prev: AllocateResult, cidr: string, claims: Claim[]): AllocateResult {
  return allocate({ cidr, allocations: prev.allocations, released: prev.released, claims });
}

function holds(t: Test, property: fc.IProperty<unknown>): void {
  fc.assert(property, { numRuns: 400 });
  t.pass("holds on 400 random cases");
}

t.test("a CIDR's usable range excludes the network and broadcast addresses", async (t) => {
  const r = parseCidr("10.0.1.0/24");
  t.equal(intToIp(r.first), "10.0.1.1");
  t.equal(intToIp(r.last), "10.0.1.254");
  const host = parseCidr("10.0.1.77/30");
  t.equal(intToIp(host.network), "10.0.1.76", "host bits are ignored");
  t.equal(host.last - host.first + 1, 2);
  t.throws(() => parseCidr("10.0.1.0"), /not an IPv4 CIDR/);
  t.throws(() => parseCidr("300.0.0.0/8"), /not an IPv4 CIDR/);
  t.equal(ipToInt("1.2.3"), undefined);
});

t.test("pods get the lowest addresses in key order, and keep them while they exist", async (t) => {
  const first = allocate({
    cidr: "10.0.1.0/24",
    allocations: [],
    released: [],
    claims: [claim("b"), claim("a")],
  });
  t.same(
    first.allocations.map((a) => [a.pod, a.ip]),
    [
      ["a", "10.0.1.1"],
      ["b", "10.0.1.2"],
    ],
  );
  const again = next(first, "10.0.1.0/24", [claim("c"), claim("a"), claim("b")]);
  t.equal(ipOf(again, "a"), "10.0.1.1");
  t.equal(ipOf(again, "b"), "10.0.1.2");
  t.equal(ipOf(again, "c"), "10.0.1.3");
});

t.test("a pod re-created under the same name gets its address back, even after others came", async (t) => {
  const cidr = "10.0.1.0/24";
  const one = allocate({ cidr, allocations: [], released: [], claims: [claim("a"), claim("b")] });
  const gone = next(one, cidr, [claim("b")]);
  t.equal(ipOf(gone, "a"), undefined, "released when the pod is gone");
  t.same(gone.released, [{ ip: "10.0.1.1", job: "j", task: "t", pod: "a", cluster: "c1" }]);
  const other = next(gone, cidr, [claim("b"), claim("z")]);
  t.equal(
    ipOf(other, "z"),
    "10.0.1.3",
    "a newcomer does not take a remembered address while others are free",
  );
  const back = next(other, cidr, [claim("b"), claim("z"), claim("a", "j", "t", "c2")]);
  t.equal(ipOf(back, "a"), "10.0.1.1");
  t.equal(back.allocations.find((a) => a.pod === "a")?.cluster, "c2", "the cluster follows the pod");
  t.same(back.released, []);
});

t.test("a released address is reused when the range has nothing else", async (t) => {
  const cidr = "10.0.1.0/30";
  const full = allocate({ cidr, allocations: [], released: [], claims: [claim("a"), claim("b")] });
  t.same(full.unallocated, []);
  const third = next(full, cidr, [claim("a"), claim("b"), claim("c")]);
  t.same(third.unallocated, [claim("c")], "the /30 has two addresses");
  const afterDelete = next(third, cidr, [claim("b"), claim("c")]);
  t.equal(ipOf(afterDelete, "c"), "10.0.1.1", "c takes the address a released");
  t.same(afterDelete.unallocated, []);
});

t.test("a changed CIDR moves every allocation into the new range", async (t) => {
  const one = allocate({ cidr: "10.0.1.0/24", allocations: [], released: [], claims: [claim("a")] });
  const moved = next(one, "10.0.2.0/24", [claim("a")]);
  t.equal(ipOf(moved, "a"), "10.0.2.1");
  t.same(moved.released, []);
});

const podNames = ["a", "b", "c", "d", "e", "f", "g", "h"];
const claimsArb = fc
  .uniqueArray(fc.constantFrom(...podNames), { maxLength: podNames.length })
  .map((names) =>
    names.map((n) => claim(n, n.charCodeAt(0) % 2 ? "j1" : "j2", "t", `c${n.charCodeAt(0) % 3}`)),
  );
const historyArb = fc.record({
  prefix: fc.constantFrom(29, 30, 28, 24),
  steps: fc.array(claimsArb, { minLength: 1, maxLength: 8 }),
});

/** Applies each step's claims in turn, checking `check` between consecutive results. */
function run(
  prefix: number,
  steps: Claim[][],
  check: (prev: AllocateResult | undefined, input: AllocateInput, out: AllocateResult) => boolean,
): boolean {
  const cidr = `10.1.0.0/${prefix}`;
  let prev: AllocateResult | undefined;
  for (const claims of steps) {
    const input = { cidr, allocations: prev?.allocations ?? [], released: prev?.released ?? [], claims };
    const out = allocate(input);
    if (!check(prev, input, out)) return false;
    prev = out;
  }
  return true;
}

t.test("property: addresses are unique, usable, one per claim, and only for claims", async (t) => {
  holds(
    t,
    fc.property(historyArb, ({ prefix, steps }) =>
      run(prefix, steps, (_prev, input, out) => {
        const r = parseCidr(input.cidr);
        const ips = out.allocations.map((a) => ipToInt(a.ip) ?? -1);
        if (new Set(ips).size !== ips.length) return false;
        if (!ips.every((n) => n >= r.first && n <= r.last)) return false;
        const keys = out.allocations.map(claimKey);
        if (new Set(keys).size !== keys.length) return false;
        const claimed = new Set(input.claims.map(claimKey));
        if (!keys.every((k) => claimed.has(k))) return false;
        if (out.allocations.length + out.unallocated.length !== claimed.size) return false;
        // Only a full range leaves a claim without an address.
        return out.unallocated.length === 0 || out.allocations.length === out.usable;
      }),
    ),
  );
});

t.test("property: an address held by a pod that still exists never changes", async (t) => {
  holds(
    t,
    fc.property(historyArb, ({ prefix, steps }) =>
      run(prefix, steps, (prev, input, out) => {
        const claimed = new Set(input.claims.map(claimKey));
        for (const a of prev?.allocations ?? []) {
          if (!claimed.has(claimKey(a))) continue;
          if (out.allocations.find((b) => claimKey(b) === claimKey(a))?.ip !== a.ip) return false;
        }
        return true;
      }),
    ),
  );
});

t.test("property: allocation is deterministic, idempotent, and ignores claim order", async (t) => {
  holds(
    t,
    fc.property(historyArb, fc.integer(), ({ prefix, steps }, seed) =>
      run(prefix, steps, (_prev, input, out) => {
        const shuffled = [...input.claims].sort(
          (a, b) => ((claimKey(a).charCodeAt(0) * seed) % 7) - ((claimKey(b).charCodeAt(0) * seed) % 7),
        );
        const again = allocate({ ...input, claims: shuffled });
        const stable = allocate({ ...input, allocations: out.allocations, released: out.released });
        return (
          JSON.stringify(again) === JSON.stringify(out) &&
          JSON.stringify(stable.allocations) === JSON.stringify(out.allocations) &&
          JSON.stringify(stable.released) === JSON.stringify(out.released)
        );
      }),
    ),
  );
});

t.test("property: with room to spare, a returning pod gets the address it had", async (t) => {
  holds(
    t,
    fc.property(claimsArb, fc.nat({ max: 7 }), (claims, i) => {
      const cidr = "10.2.0.0/24";
      const victim = claims[i % Math.max(1, claims.length)];
      if (!victim) return true;
      const before = allocate({ cidr, allocations: [], released: [], claims });
      const without = next(
        before,
        cidr,
        claims.filter((c) => c !== victim),
      );
      const newcomers = [claim("x1", "new"), claim("x2", "new")];
      const crowded = next(without, cidr, [...claims.filter((c) => c !== victim), ...newcomers]);
      const back = next(crowded, cidr, [...claims, ...newcomers]);
      return ipOf(back, victim.pod) === ipOf(before, victim.pod);
    }),
  );
});
