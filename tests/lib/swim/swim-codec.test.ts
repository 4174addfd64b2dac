import t from "tap";
import {
  decode,
  encode,
  groupKey,
  MAX_MESSAGE_BYTES,
  type Message,
  swimParams,
} from "../../../operators/lib/swim/index.ts";

const key = groupKey("secret", "beijing");
const message: Message = {
  type: "ping",
  from: { id: "node-1", address: "127.0.0.1:7946", incarnation: 3 },
  seq: 9,
  updates: [{ id: "node-2", address: "127.0.0.1:7947", state: "suspect", incarnation: 1 }],
};

t.test("a message decodes with its group's key, and with no other", async (t) => {
  t.same(decode(encode(message, key), key), message);
  t.same(
    decode(encode(message, key), groupKey("secret", "shanghai")),
    { dropped: "bad MAC" },
    "another cluster's key",
  );
  t.same(
    decode(encode(message, key), groupKey("other", "beijing")),
    { dropped: "bad MAC" },
    "another secret",
  );
  const tampered = encode(message, key);
  tampered.writeUInt8((tampered.at(-3) ?? 0) ^ 1, tampered.length - 3);
  t.same(decode(tampered, key), { dropped: "bad MAC" }, "one flipped bit");
});

t.test("datagrams are bounded and their fields checked after the MAC", async (t) => {
  t.match(decode(Buffer.alloc(MAX_MESSAGE_BYTES + 1), key), { dropped: /exceeds/ });
  t.same(decode(Buffer.alloc(10), key), { dropped: "too short" });
  const big = { ...message, updates: Array.from({ length: 40 }, () => message.updates[0]) } as Message;
  t.throws(() => encode(big, key), /exceeds 1400/);
  const bad = { ...message, updates: [{ ...message.updates[0], state: "zombie" }] } as unknown as Message;
  t.match(decode(encode(bad, key), key), { dropped: "updates[0].state is unknown" });
  const badId = { ...message, from: { ...message.from, id: "../x" } } as Message;
  t.match(decode(encode(badId, key), key), { dropped: "from.id is not a member id" });
});

t.test("parameters are checked and named", async (t) => {
  t.throws(
    () => swimParams({ probeTimeoutMs: 2000 }),
    /probeTimeoutMs: 2000 must be below probeIntervalMs \(1000\)/,
  );
  t.throws(() => swimParams({ indirectK: 0 }), /indirectK: 0 is not an integer/);
  t.throws(() => groupKey("", "beijing"), /empty/);
});
