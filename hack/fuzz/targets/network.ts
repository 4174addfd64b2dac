// What reaches a nodeserver and an agent about Domains: the peers state (file and Secret), the
// nodeservers' GET /stats answers, and DomainPeers with traffic figures in agents' reports.
import fc from "fast-check";
import { parseStats } from "../../../operators/agent/index.ts";
import { checkSchema, parsePeersState } from "../../../operators/api/index.ts";
import { parseAgentMessage } from "../../../operators/lib/tunnel/index.ts";
import { parsePeersSecret } from "../../../operators/network/index.ts";
import { kindArbitrary, SCHEMAS, schemaArbitrary, validAndBroken } from "../schema-arbitrary.ts";
import { clearly, type FuzzTarget, flip } from "../target.ts";

const FILE = "domain-peer.schema.json";
const defs = (SCHEMAS.get(FILE) as { $defs: Record<string, Record<string, unknown>> }).$defs;
const peerSpec = schemaArbitrary(defs.DomainPeerSpec as Record<string, unknown>, FILE);
const traffic = schemaArbitrary(defs.DomainTraffic as Record<string, unknown>, FILE);

const state = fc.record(
  {
    globalNamespace: fc.oneof(fc.constant("agent-a"), fc.string()),
    hub: fc.record({ address: fc.oneof(fc.constant("127.0.0.1:7443"), fc.string()), caPem: fc.string() }),
    statsToken: fc.string(),
    domains: fc.array(
      fc
        .tuple(
          peerSpec,
          fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/),
          fc.option(fc.constantFrom("10.0.0.0/16", "10.1.2.3/33", "x")),
        )
        .map(([spec, domain, cidr]) => ({ ...(spec as object), domain, ...(cidr ? { cidr } : {}) })),
      { maxLength: 3 },
    ),
  },
  { requiredKeys: ["globalNamespace", "domains"] },
);
const stateText = fc.oneof(
  { weight: 6, arbitrary: validAndBroken(state).map((s) => JSON.stringify(s)) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(state, fc.nat(), fc.constantFrom(0x22, 0x2c, 0x7b, 0x5d, 0x30, 0x00))
      .map(([s, at, b]) => flip(JSON.stringify(s), at, b).toString("utf8")),
  },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 200 }) },
);

export const peersState: FuzzTarget<string> = {
  name: "peers-state",
  about: "the peers state a nodeserver reads (peers.json): api/peers-state.ts parsePeersState",
  input: stateText,
  async run(text) {
    await clearly(() => parsePeersState(text, "peers.json"));
  },
};

export const peersSecret: FuzzTarget<Record<string, string>> = {
  name: "peers-secret",
  about: "the peers Secret a nodeserver watches: network/peers-from-secret.ts parsePeersSecret",
  input: fc.oneof(
    stateText.map((t) => ({ "peers.json": Buffer.from(t).toString("base64") })),
    fc.dictionary(fc.oneof(fc.constant("peers.json"), fc.string()), fc.string(), { maxKeys: 2 }),
  ),
  async run(data) {
    await clearly(() => parsePeersSecret(data));
  },
};

const ip = fc.oneof(fc.ipV4(), fc.constantFrom("256.1.1.1", "1.2.3", "::1", ""));
const count = fc.oneof(fc.nat(), fc.constantFrom(-1, 1.5, Number.MAX_SAFE_INTEGER + 2), fc.string());
const stats = fc.dictionary(
  fc.string({ maxLength: 20 }),
  fc.record({
    connections: fc.array(fc.record({ activeStreams: count }), { maxLength: 3 }),
    peers: fc.array(
      fc.record({
        source: ip,
        target: ip,
        activeStreams: count,
        bytesSent: count,
        bytesReceived: count,
        path: fc.constantFrom("local", "hub", "x", undefined),
      }),
      { maxLength: 3 },
    ),
  }),
  { maxKeys: 3 },
);

export const nodeserverStats: FuzzTarget<string> = {
  name: "nodeserver-stats",
  about: "nodeservers' GET /stats answers the agent polls: agent/nodeserver-stats.ts parseStats",
  input: fc.oneof(
    { weight: 5, arbitrary: validAndBroken(stats).map((s) => JSON.stringify(s)) },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 200 }) },
  ),
  async run(body) {
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      return; // the poller refuses a body that is not JSON before parseStats
    }
    await clearly(() => parseStats(value));
  },
};

/** A stored DomainPeer, as the hub holds it, that the reported traffic is merged into. */
const STORED = fc.sample(
  kindArbitrary(FILE).filter((p) => checkSchema(p).length === 0),
  { seed: 1, numRuns: 1 },
)[0] as Record<string, unknown>;

export const domainPeerReports: FuzzTarget<string> = {
  name: "domain-peer-reports",
  about:
    "DomainPeers in agents' reports: parseAgentMessage, then the traffic merged and schema-checked as agent-sync does",
  input: fc
    .array(validAndBroken(validAndBroken(traffic).map((t) => ({ ...STORED, status: { traffic: t } }))), {
      maxLength: 3,
    })
    .map((domainPeers) =>
      JSON.stringify({ type: "report", nodes: [], pods: [], tasks: [], capabilities: [], domainPeers }),
    ),
  async run(line) {
    const message = await clearly(() => parseAgentMessage(JSON.parse(line)));
    if (message?.type !== "report") return;
    for (const reported of message.domainPeers ?? []) {
      const reportedTraffic = (reported.status as { traffic?: unknown } | undefined)?.traffic;
      await clearly(() => checkSchema({ ...STORED, status: { traffic: reportedTraffic } }));
    }
  },
};
