// The hub relay's byte counter trails the wire when rlark-net moves the bytes (it reports on a
// 500 ms tick), so a test that checks "the hub relayed it" waits for the count instead of reading
// it once right after the transfer.
import type { DomainRelay } from "../../operators/domain-relay/relay.ts";
import { waitFor } from "./wait-for.ts";

/** Resolves with the bytes relayed since `before` once they reach `atLeast`; rejects after ~5 s. */
export function relayedSince(
  relay: Pick<DomainRelay, "stats"> | undefined,
  before: number,
  atLeast = 1,
): Promise<number> {
  return waitFor(
    `the hub relay to count ${atLeast} bytes`,
    () => {
      const moved = (relay?.stats().relayedBytes ?? 0) - before;
      return moved >= atLeast ? moved : undefined;
    },
    { attempts: 100, everyMs: 50 },
  );
}
