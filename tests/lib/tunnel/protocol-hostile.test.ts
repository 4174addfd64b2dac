// Messages that crashed the protocol's checkers under hack/fuzz, kept as regressions: each must be
// refused with a ProtocolError that says why, never a TypeError.
import t from "tap";
import { ProtocolError, parseAgentMessage, parseHubMessage } from "../../../operators/lib/tunnel/index.ts";

// hack/fuzz/run --seed 990055646 --target tunnel-hub-to-agent, input 3780: a `type` that is an
// object with a string-valued toString, which String() cannot convert.
const HOSTILE_TYPES = [
  '{"type":{"toString":"%d"}}',
  '{"type":{"valueOf":1,"toString":[]}}',
  '{"type":[{"toString":"x"}]}',
];

t.test("a message whose type is an object without a callable toString is refused clearly", async (t) => {
  for (const line of HOSTILE_TYPES) {
    for (const [side, parse] of [
      ["hub", parseHubMessage],
      ["agent", parseAgentMessage],
    ] as const) {
      t.throws(() => parse(JSON.parse(line)), ProtocolError, `${side}: ${line}`);
      t.throws(
        () => parse(JSON.parse(line)),
        /unknown (hub|agent) message type/,
        `${side}: ${line} says why`,
      );
    }
  }
});
