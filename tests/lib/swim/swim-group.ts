// A SWIM group in this process on real UDP sockets, driven by one FakeClock. Time moves in small
// steps; after each the group is left to deliver every datagram sent to an open socket (counted on
// both ends), so the protocol's outcome depends on what was said, not on how busy the machine is.
import type { Test } from "tap";
import { FakeClock } from "../../../operators/lib/clock.ts";
import {
  groupKey,
  type MemberInfo,
  SwimMember,
  type SwimParams,
  type Transport,
  UdpTransport,
} from "../../../operators/lib/swim/index.ts";

export const TEST_PARAMS: Partial<SwimParams> = {
  probeIntervalMs: 1000,
  probeTimeoutMs: 300,
  suspicionMultiplier: 5,
  indirectK: 3,
};

export interface GroupMember {
  member: SwimMember;
  /** Every state change it saw, with the clock's time. */
  seen: (MemberInfo & { at: number })[];
  /** A paused member neither sends nor receives, like a stopped process whose socket stays bound. */
  paused: boolean;
  open: boolean;
}

export interface Group {
  clock: FakeClock;
  members: GroupMember[];
  add(id: string, secret?: string): Promise<GroupMember>;
  /** Advances the clock by `ms` in steps of `stepMs`, delivering what each step sent. */
  run(ms: number, stepMs?: number): Promise<void>;
  /** Runs until `done` holds, at most `maxMs` of clock time; false if it never did. */
  runUntil(done: () => boolean, maxMs: number): Promise<boolean>;
  kill(m: GroupMember): Promise<void>;
}

/** Deterministic per member, so a run's probe order repeats. */
function seeded(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

export function startGroup(t: Test, params: Partial<SwimParams> = TEST_PARAMS): Group {
  const clock = new FakeClock();
  const members: GroupMember[] = [];
  const openAddresses = new Set<string>();
  let expected = 0;
  let received = 0;
  let seed = 1;
  let seedAddress: string | undefined;

  const settle = async () => {
    for (let i = 0; i < 400 && received < expected; i++)
      await new Promise((resolve) => setTimeout(resolve, 1));
    // one more turn of the loop: handlers of the last datagrams may send answers
    await new Promise((resolve) => setImmediate(resolve));
  };

  const group: Group = {
    clock,
    members,
    async add(id, secret = "cluster-secret") {
      const udp = await UdpTransport.open({ host: "127.0.0.1", port: 0 });
      openAddresses.add(udp.address);
      const entry = { paused: false, open: true, seen: [] } as unknown as GroupMember;
      const transport: Transport = {
        address: udp.address,
        send(to, data) {
          if (entry.paused) return;
          if (openAddresses.has(to)) expected++;
          udp.send(to, data);
        },
        onMessage(handler) {
          udp.onMessage((data, from) => {
            received++;
            if (!entry.paused) handler(data, from);
          });
        },
        async close() {
          openAddresses.delete(udp.address);
          await udp.close();
        },
      };
      entry.member = new SwimMember({
        id,
        key: groupKey(secret, "beijing"),
        transport,
        clock,
        params,
        seeds: seedAddress ? [seedAddress] : [],
        random: seeded(seed++ * 7919),
        onChange: (info) => entry.seen.push({ ...info, at: clock.now() }),
      });
      seedAddress ??= udp.address;
      members.push(entry);
      entry.member.start();
      await settle();
      return entry;
    },
    async run(ms, stepMs = 50) {
      for (let done = 0; done < ms; done += stepMs) {
        clock.advance(stepMs);
        await settle();
      }
    },
    async runUntil(done, maxMs) {
      for (let elapsed = 0; elapsed < maxMs; elapsed += 50) {
        if (done()) return true;
        await group.run(50);
      }
      return done();
    },
    async kill(m) {
      m.open = false;
      await m.member.stop();
    },
  };
  t.teardown(async () => {
    for (const m of members) if (m.open) await m.member.stop();
  });
  return group;
}

/** The state `observer` holds for `id`, if any. */
export function stateOf(observer: GroupMember, id: string): string | undefined {
  return observer.member.members().find((m) => m.id === id)?.state;
}
