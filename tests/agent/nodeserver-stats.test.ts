// The agent's reading of a nodeserver's GET /stats (contract B) over a real unix socket. The
// server here is a stand-in serving the contract's JSON: the nodeserver itself is built on a
// parallel branch (operators/network, netpath), and this is the other half of that contract.

import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import {
  domainTraffic,
  MAX_PAIRS,
  parseStats,
  readNodeserverStats,
} from "../../operators/agent/nodeserver-stats.ts";
import { statsServer } from "../helpers/stats-server.ts";

const pair = (source: string, target: string, activeStreams: number, bytes: number) => ({
  source,
  target,
  activeStreams,
  bytesSent: bytes,
  bytesReceived: 0,
  path: "local" as const,
});

t.test("GET /stats is read over the socket and checked", async (t) => {
  const body = {
    lab: {
      connections: [{ activeStreams: 2, lastActive: "2026-03-01T10:00:00.000Z" }],
      reverseLink: true,
      peers: [pair("10.0.7.2", "10.0.7.3", 1, 5000)],
    },
  };
  const socket = await statsServer(t, (send) => send(200, JSON.stringify(body)));
  t.same(await readNodeserverStats(socket), {
    lab: { connections: [{ activeStreams: 2 }], peers: [pair("10.0.7.2", "10.0.7.3", 1, 5000)] },
  });
});

t.test("a bad answer is refused, naming the Domain and field", async (t) => {
  t.throws(() => parseStats([]), /the body must be an object of Domains/);
  t.throws(
    () => parseStats({ lab: { connections: [], peers: [{ ...pair("10.0.7.2", "x", 0, 0) }] } }),
    /Domain "lab": peers\[0\]\.target must be an IPv4 address/,
  );
  t.throws(
    () => parseStats({ lab: { connections: [], peers: [pair("10.0.7.2", "10.0.7.3", -1, 0)] } }),
    /peers\[0\]\.activeStreams must be a count/,
  );
  const error = await statsServer(t, (send) => send(500, "{}"));
  await t.rejects(readNodeserverStats(error), /GET \/stats: HTTP 500/);
  const huge = await statsServer(t, (send) => send(200, `"${"x".repeat(5 * 1024 * 1024)}"`));
  await t.rejects(readNodeserverStats(huge), /larger than 4194304 bytes/, "an endless body is cut off");
  await t.rejects(readNodeserverStats(path.join(tmpdir(), "rlark-no-such-socket")), /ENOENT/);
});

t.test("several nodeservers' figures are summed and bounded to the busiest pairs", async (t) => {
  const many = Array.from({ length: MAX_PAIRS + 5 }, (_, i) => pair("10.0.7.2", `10.0.8.${i}`, 0, i));
  const traffic = domainTraffic(
    [
      { connections: [{ activeStreams: 1 }], peers: [pair("10.0.7.9", "10.0.7.3", 2, 10), ...many] },
      {
        connections: [{ activeStreams: 0 }, { activeStreams: 3 }],
        peers: [pair("10.0.7.9", "10.0.7.3", 1, 5)],
      },
    ],
    "2026-03-01T10:00:00Z",
  );
  t.equal(traffic.poolConnections, 3, "pool connections of both nodeservers");
  t.equal(traffic.pairs.length, MAX_PAIRS, "at most MAX_PAIRS pairs");
  t.equal(traffic.omittedPairs, 6, "the rest counted");
  t.same(
    traffic.pairs[0],
    { ...pair("10.0.7.9", "10.0.7.3", 3, 15) },
    "a pair seen twice is summed, busiest first",
  );
  t.equal(traffic.pairs[1]?.target, `10.0.8.${MAX_PAIRS + 4}`, "then by bytes");
});
