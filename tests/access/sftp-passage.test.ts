// ResponsePassage: sftp-server's answers go on uncopied and uncut, and a refusal lands only
// where one of its packets ends, whatever the chunking.
import t from "tap";
import { ResponsePassage } from "../../operators/agent/runtimes/shared/sftp-passage.ts";

function packet(type: number, id: number, bodyBytes: number): Buffer {
  const out = Buffer.alloc(4 + 1 + 4 + bodyBytes, 0xab);
  out.writeUInt32BE(1 + 4 + bodyBytes, 0);
  out.writeUInt8(type, 4);
  out.writeUInt32BE(id, 5);
  return out;
}

/** Splits a concatenation of packets back into [type, id] pairs; throws on a torn packet. */
function parse(bytes: Buffer): [number, number][] {
  const out: [number, number][] = [];
  let at = 0;
  while (at < bytes.length) {
    const length = bytes.readUInt32BE(at);
    if (at + 4 + length > bytes.length) throw new Error(`torn packet at ${at}`);
    out.push([bytes.readUInt8(at + 4), bytes.readUInt32BE(at + 5)]);
    at += 4 + length;
  }
  return out;
}

// Three 32 KiB read answers (SSH_FXP_DATA = 103) as sftp-server writes them.
const stream = Buffer.concat([packet(103, 1, 32772), packet(103, 2, 32772), packet(103, 3, 32772)]);

t.test("chunks pass through as they came, sharing the reader's memory", async (t) => {
  const pushed: Buffer[] = [];
  const passage = new ResponsePassage((chunk) => pushed.push(chunk) > 0, 300_000);
  const chunks = [stream.subarray(0, 65536), stream.subarray(65536)];
  for (const chunk of chunks) passage.write(chunk);
  t.equal(pushed.length, 2, "one push per chunk read, not one per SFTP packet");
  t.ok(pushed[0]?.buffer === stream.buffer && pushed[0].byteOffset === 0, "not copied");
  t.same(Buffer.concat(pushed), stream);
});

t.test("a refusal mid-packet waits for that packet's end, for every cut", async (t) => {
  const refusal = packet(101, 99, 20);
  for (const cut of [1, 2, 3, 4, 5, 9, 100, 32780, 32781, 32782, 32785, 50_000, 65562, 65563]) {
    const pushed: Buffer[] = [];
    const passage = new ResponsePassage((chunk) => pushed.push(chunk) > 0, 300_000);
    passage.write(stream.subarray(0, cut));
    passage.refuse(refusal);
    passage.write(stream.subarray(cut));
    const ids = parse(Buffer.concat(pushed)).map(([, id]) => id);
    const firstEnd = 4 + stream.readUInt32BE(0);
    const secondEnd = firstEnd + 4 + stream.readUInt32BE(firstEnd);
    const expected = cut <= firstEnd ? [1, 99, 2, 3] : cut <= secondEnd ? [1, 2, 99, 3] : [1, 2, 3, 99];
    t.same(ids, expected, `cut at ${cut}`);
  }
});

t.test("a refusal between packets goes at once", async (t) => {
  const pushed: Buffer[] = [];
  const passage = new ResponsePassage((chunk) => pushed.push(chunk) > 0, 300_000);
  passage.refuse(packet(101, 7, 10));
  t.same(
    parse(Buffer.concat(pushed)).map(([, id]) => id),
    [7],
  );
});

t.test("an oversized or empty packet length is an error", async (t) => {
  const passage = new ResponsePassage(() => true, 1000);
  const big = Buffer.alloc(8);
  big.writeUInt32BE(1001, 0);
  t.throws(() => passage.write(big), /an SFTP packet of 1001 bytes/);
  t.throws(() => new ResponsePassage(() => true, 1000).write(Buffer.alloc(4)), /an SFTP packet of 0 bytes/);
});

t.test("the reader's backpressure is reported", async (t) => {
  const passage = new ResponsePassage(() => false, 300_000);
  t.equal(passage.write(stream.subarray(0, 10)), false);
});
