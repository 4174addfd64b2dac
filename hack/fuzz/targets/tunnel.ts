// Tunnel messages, both directions: newline-delimited JSON split as the channel splits it
// (LineSplitter, bounded lines), each line parsed by the protocol's checker. Lines are messages
// of every type with fields right, wrong or missing, raw bytes, and chunkings of both.
import fc from "fast-check";
import { LineSplitter, parseAgentMessage, parseHubMessage } from "../../../operators/lib/tunnel/index.ts";
import { kindArbitrary, validAndBroken } from "../schema-arbitrary.ts";
import { clearly, type FuzzTarget } from "../target.ts";

const MAX_LINE = 64 * 1024;
const object = fc.oneof(
  ...["task.schema.json", "pod.schema.json", "node.schema.json", "domain-peer.schema.json"].map((f) =>
    validAndBroken(kindArbitrary(f)),
  ),
);
const capability = fc.record({
  name: fc.string({ maxLength: 20 }),
  type: fc.constantFrom("process", "health", "other"),
  state: fc.constantFrom("RUNNING", "READY", "FAILED", "weird"),
  message: fc.string({ maxLength: 30 }),
});
const fromAgent = fc.oneof(
  fc.record({
    type: fc.constant("hello"),
    cluster: fc.string({ maxLength: 30 }),
    agentVersion: fc.string({ maxLength: 10 }),
    bootId: fc.uuid(),
    runtime: fc.constantFrom("kubernetes", "process", "docker", "vm"),
    capabilities: fc.array(capability, { maxLength: 3 }),
  }),
  fc.record({ type: fc.constant("ack"), generation: fc.oneof(fc.integer(), fc.double(), fc.string()) }),
  fc.record(
    {
      type: fc.constant("report"),
      nodes: fc.array(object, { maxLength: 2 }),
      pods: fc.array(object, { maxLength: 2 }),
      tasks: fc.array(object, { maxLength: 2 }),
      domainPeers: fc.array(object, { maxLength: 2 }),
      capabilities: fc.array(capability, { maxLength: 2 }),
      kubernetesVersion: fc.string(),
      storageClasses: fc.array(
        fc.record({ name: fc.string(), provisioner: fc.string(), default: fc.boolean() }),
        { maxLength: 2 },
      ),
      lastTest: fc.record({ testedAt: fc.string(), ok: fc.boolean(), message: fc.string() }),
      agentGroup: fc.anything({ maxDepth: 2 }),
      pingMesh: fc.dictionary(fc.string(), fc.anything({ maxDepth: 2 }), { maxKeys: 3 }),
    },
    { requiredKeys: ["type", "nodes", "pods", "tasks", "capabilities"] },
  ),
  fc.record({ type: fc.constant("heartbeat"), capabilities: fc.array(capability, { maxLength: 3 }) }),
  fc.record({ type: fc.constant("renew"), publicKey: fc.string({ maxLength: 100 }) }),
);
const fromHub = fc.oneof(
  fc.record({
    type: fc.constant("welcome"),
    hostCert: fc.string(),
    heartbeatIntervalMs: fc.oneof(fc.integer(), fc.double()),
  }),
  fc.record({
    type: fc.constant("snapshot"),
    generation: fc.integer(),
    objects: fc.array(object, { maxLength: 3 }),
  }),
  fc.record({
    type: fc.constant("delta"),
    generation: fc.integer(),
    upserts: fc.array(object, { maxLength: 3 }),
    deletes: fc.array(fc.record({ kind: fc.string(), namespace: fc.string(), name: fc.string() }), {
      maxLength: 3,
    }),
  }),
  fc.record({ type: fc.constant("certificate"), cert: fc.string() }),
  fc.record({ type: fc.constant("error"), message: fc.string({ maxLength: 5000 }) }),
);

/** A stream of lines: messages (valid and broken) and raw bytes, cut into random chunks. */
function stream(messages: fc.Arbitrary<unknown>): fc.Arbitrary<Buffer[]> {
  const line = fc.oneof(
    { weight: 5, arbitrary: validAndBroken(messages).map((m) => Buffer.from(`${JSON.stringify(m)}\n`)) },
    {
      weight: 1,
      arbitrary: fc
        .uint8Array({ maxLength: 100 })
        .map((b) => Buffer.concat([Buffer.from(b), Buffer.from("\n")])),
    },
    { weight: 1, arbitrary: fc.nat({ max: 3 }).map((n) => Buffer.alloc(MAX_LINE + n, 0x61)) },
  );
  return fc
    .tuple(fc.array(line, { minLength: 1, maxLength: 4 }), fc.array(fc.nat({ max: 4096 }), { maxLength: 4 }))
    .map(([lines, cuts]) => {
      const all = Buffer.concat(lines);
      const points = [...new Set(cuts.map((c) => c % (all.length + 1)))].sort((a, b) => a - b);
      const chunks: Buffer[] = [];
      let from = 0;
      for (const p of [...points, all.length]) {
        chunks.push(all.subarray(from, p));
        from = p;
      }
      return chunks;
    });
}

async function feed(chunks: Buffer[], parse: (v: unknown) => unknown): Promise<void> {
  const splitter = new LineSplitter(MAX_LINE);
  for (const chunk of chunks) {
    const lines = await clearly(() => splitter.push(chunk));
    if (!lines) return; // a line too long: the channel closes, as it does here
    for (const line of lines) {
      if (line.trim() === "") continue;
      await clearly(() => parse(JSON.parse(line)));
    }
  }
}

export const agentToHub: FuzzTarget<Buffer[]> = {
  name: "tunnel-agent-to-hub",
  about: "what an agent sends the hub: lib/tunnel LineSplitter + parseAgentMessage",
  input: stream(fromAgent),
  run: (chunks) => feed(chunks, parseAgentMessage),
};

export const hubToAgent: FuzzTarget<Buffer[]> = {
  name: "tunnel-hub-to-agent",
  about: "what a hub sends an agent: lib/tunnel LineSplitter + parseHubMessage",
  input: stream(fromHub),
  run: (chunks) => feed(chunks, parseHubMessage),
};
