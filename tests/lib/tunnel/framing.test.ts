import { PassThrough } from "node:stream";
import fc from "fast-check";
import t from "tap";
import {
  backoffDelay,
  LineSplitter,
  LineTooLongError,
  MessageChannel,
  ProtocolError,
  parseAgentMessage,
  parseHubAddress,
  parseHubMessage,
} from "../../../operators/lib/tunnel/index.ts";

t.test("lines split across arbitrary chunk boundaries come out whole", async () => {
  fc.assert(
    fc.property(
      fc.array(fc.string({ unit: "grapheme" }).map((s) => s.replace(/\n/g, " "))),
      fc.array(fc.nat(40)),
      (lines, cuts) => {
        const bytes = Buffer.from(lines.map((l) => `${l}\n`).join(""));
        const splitter = new LineSplitter(1 << 20);
        const out: string[] = [];
        let at = 0;
        for (const cut of cuts) {
          const end = Math.min(bytes.length, at + cut);
          out.push(...splitter.push(bytes.subarray(at, end)));
          at = end;
        }
        out.push(...splitter.push(bytes.subarray(at)));
        return JSON.stringify(out) === JSON.stringify(lines);
      },
    ),
  );
});

t.test("a line over the limit is refused even before its newline arrives", async (t) => {
  const splitter = new LineSplitter(10);
  t.same(splitter.push(Buffer.from("0123456789\n")), ["0123456789"]);
  t.throws(() => splitter.push(Buffer.from("0123456789A")), LineTooLongError);
});

t.test("the message channel closes on an invalid message and reports why", async (t) => {
  const stream = new PassThrough();
  const channel = new MessageChannel(stream, { parse: parseAgentMessage });
  const got: unknown[] = [];
  const invalid: Error[] = [];
  channel.on("message", (m) => got.push(m));
  channel.on("invalid", (e) => invalid.push(e));
  stream.write(
    '{"type":"ack","generation":3}\n{"type":"ack","generation":-1}\n{"type":"ack","generation":4}\n',
  );
  await new Promise((r) => setImmediate(r));
  t.same(got, [{ type: "ack", generation: 3 }]);
  t.match(invalid[0]?.message, /generation must be a non-negative integer/);
  t.ok(channel.closed);
});

t.test("agent and hub messages are validated field by field", async (t) => {
  const hello = {
    type: "hello",
    cluster: "beijing",
    agentVersion: "1",
    bootId: "b",
    runtime: "kubernetes",
    capabilities: [{ name: "x", process: "RUNNING", health: "READY" }],
  };
  t.same(parseAgentMessage(hello), hello);
  t.throws(() => parseAgentMessage({ ...hello, runtime: "podman" }), ProtocolError);
  t.throws(
    () => parseAgentMessage({ ...hello, capabilities: [{ name: "x", health: "GREAT" }] }),
    ProtocolError,
  );
  t.throws(
    () =>
      parseAgentMessage({ type: "report", nodes: [{ kind: "Node" }], pods: [], tasks: [], capabilities: [] }),
    /apiVersion/,
  );
  const report = { type: "report", nodes: [], pods: [], tasks: [], capabilities: [] };
  const addon = {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "AddonRelease",
    metadata: { name: "demo", namespace: "agent-x" },
    status: { phase: "Ready" },
  };
  t.same(parseAgentMessage({ ...report, addons: [addon] }), { ...report, addons: [addon] });
  t.same(parseAgentMessage(report), report, "an older agent sends no addons");
  t.throws(() => parseAgentMessage({ ...report, addons: {} }), /addons must be an array/);
  t.throws(() => parseAgentMessage({ ...report, addons: [{ kind: "AddonRelease" }] }), /apiVersion/);
  t.throws(() => parseAgentMessage({ type: "shell", command: "rm -rf /" }), /unknown agent message type/);
  t.throws(() => parseAgentMessage([]), ProtocolError);
  const delta = {
    type: "delta",
    generation: 2,
    upserts: [
      { apiVersion: "rlinf.io/v1alpha1", kind: "Task", metadata: { name: "a", namespace: "agent-x" } },
    ],
    deletes: [{ kind: "Task", name: "b", namespace: "agent-x" }],
  };
  t.same(parseHubMessage(delta), delta);
  t.throws(() => parseHubMessage({ ...delta, deletes: [{ kind: "Task" }] }), /name must be a string/);
  t.throws(() => parseHubMessage({ type: "welcome", hostCert: "x", heartbeatIntervalMs: 0 }), ProtocolError);
});

t.test("backoff doubles from 1 s to 30 s with jitter in the upper half", async (t) => {
  const lo = (n: number) => backoffDelay(n, {}, () => 0);
  const hi = (n: number) => backoffDelay(n, {}, () => 1);
  t.same([0, 1, 2, 3, 4, 5, 6, 10].map(hi), [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  t.same([0, 1, 5].map(lo), [500, 1000, 15000]);
  t.equal(
    backoffDelay(3, { initialMs: 10, maxMs: 50 }, () => 1),
    50,
  );
});

t.test("hub addresses default to port 2222 and accept IPv6", async (t) => {
  t.same(parseHubAddress("hub.example.com"), { host: "hub.example.com", port: 2222 });
  t.same(parseHubAddress("10.0.0.1:2022"), { host: "10.0.0.1", port: 2022 });
  t.same(parseHubAddress("[::1]:2222"), { host: "::1", port: 2222 });
  t.throws(() => parseHubAddress("host:99999"));
});
