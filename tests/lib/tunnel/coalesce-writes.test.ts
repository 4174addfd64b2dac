// coalesceWrites: the writes of one tick leave in one batch (the socket is corked until the
// tick ends), in order and whole, and a later tick's writes are not held back.
import { once } from "node:events";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import t from "tap";
import { coalesceWrites } from "../../../operators/lib/tunnel/coalesce-writes.ts";
import { waitFor } from "../../helpers/wait-for.ts";

t.test("one tick's writes are corked together and all arrive, in order", async (t) => {
  const received: Buffer[] = [];
  const server = createServer((socket) => socket.on("data", (d: Buffer) => received.push(d)));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const client = connect((server.address() as AddressInfo).port, "127.0.0.1");
  await once(client, "connect");
  t.teardown(() => {
    client.destroy();
    server.close();
  });
  coalesceWrites(client);
  const packets = Array.from({ length: 20 }, (_, i) => Buffer.alloc(1000, i));
  for (const packet of packets) client.write(packet);
  t.equal(client.writableCorked, 1, "corked for the rest of the tick");
  t.equal(client.writableLength, 20_000, "nothing written yet");
  await new Promise((resolve) => process.nextTick(resolve));
  t.equal(client.writableCorked, 0, "uncorked once the tick ends");
  await waitFor("all 20 packets", () => Buffer.concat(received).length === 20_000);
  t.same(Buffer.concat(received), Buffer.concat(packets));

  // A write in a later tick goes out too.
  await new Promise((resolve) => setImmediate(resolve));
  client.write(Buffer.from("late"));
  await waitFor("the late write", () => Buffer.concat(received).length === 20_004);
  t.equal(Buffer.concat(received).subarray(20_000).toString(), "late");
});

t.test("an echo with both ends coalesced carries every byte and ends cleanly", async (t) => {
  // The tunnel's own tests (tests/lib/tunnel) run hub and agent over such sockets.
  const server = createServer((socket: Socket) => {
    coalesceWrites(socket);
    socket.pipe(socket);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const client = connect((server.address() as AddressInfo).port, "127.0.0.1");
  coalesceWrites(client);
  t.teardown(() => server.close());
  const chunks: Buffer[] = [];
  client.on("data", (d: Buffer) => chunks.push(d));
  const payload = Buffer.alloc(4 * 1024 * 1024, 5);
  client.end(payload);
  await once(client, "end");
  client.destroy();
  t.same(Buffer.concat(chunks).length, payload.length);
});
