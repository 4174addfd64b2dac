// The Go relay's memory is bounded (issue 25, "Fault behaviour"): `rlark-net relay` holding 10,000
// idle connections that have not finished their ticket line, and a joined stream whose reader stops
// reading, each stays under a stated resident size. The bounds are the figures measured here with
// room for another Go version (docs/networking.md, "Memory of the Go relay"); they assert bytes,
// never time.
import { readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import type { TLSSocket } from "node:tls";
import t from "tap";
import { systemClock } from "../../operators/lib/clock.ts";
import { acceptFromHub, HubConnection, type InboundStream } from "../../operators/network/index.ts";
import { goRelayOptions } from "../helpers/relay-engine.ts";
import { startRelayHub } from "../helpers/relay-hub.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const IDLE = 10_000;
/** Resident size of the relay holding IDLE idle connections, at most (measured: see the doc). */
const IDLE_RSS_BOUND = 64 * 1024 * 1024;
/** Growth of the relay's resident size while a joined stream waits on its slow reader, at most. */
const SLOW_READER_GROWTH_BOUND = 8 * 1024 * 1024;
/** What the writer sends while its reader does not read: far more than any socket buffer. */
const SENT = 64 * 1024 * 1024;
const A = "100.98.0.10";
const B = "100.98.0.20";

// 10,000 clients here and 10,000 sockets in the relay, which inherits this process's limit (Node
// and Go each raise their soft limit to the hard one). A container's root may not raise the hard
// limit itself (prlimit: "Operation not permitted"), so the run's `ulimit -n` must allow it.
const nofile = Number(readFileSync("/proc/self/limits", "utf8").match(/^Max open files\s+(\d+)/m)?.[1]);
if (!(nofile >= IDLE + 2000))
  throw new Error(
    `this test needs ulimit -n of at least ${IDLE + 2000}; it is ${nofile} (run ulimit -n 20000 first)`,
  );

function rss(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB$/m);
  if (!line) throw new Error(`no VmRSS for ${pid}`);
  return Number(line[1]) * 1024;
}

const openFds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;
const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;

t.test(`the Go relay holding ${IDLE} connections without a whole ticket line stays bounded`, async (t) => {
  const { hub } = await startRelayHub(t, "go-relay-idle", goRelayOptions());
  const pid = hub.domainRelay?.goEngine()?.pid as number;
  const [host, port] = (hub.domainRelayAddress as string).split(":") as [string, string];
  const before = { rss: rss(pid), fds: openFds(pid) };
  const clients: net.Socket[] = [];
  t.teardown(() => {
    for (const c of clients) c.destroy();
  });
  for (let i = 0; i < IDLE; i++) {
    const socket = net.connect(Number(port), host);
    socket.on("error", () => {});
    // One byte of a ticket line: not TLS, not complete, so the relay waits for the rest.
    socket.write("0");
    clients.push(socket);
  }
  await waitFor(
    `rlark-net relay holds ${IDLE} connections`,
    () => openFds(pid) >= before.fds + IDLE,
    onRealServers,
  );
  const held = rss(pid);
  t.comment(`relay RSS ${mib(before.rss)} idle, ${mib(held)} with ${IDLE} connections open`);
  t.ok(held < IDLE_RSS_BOUND, `RSS ${mib(held)} < ${mib(IDLE_RSS_BOUND)} with ${IDLE} idle connections`);
  t.equal(hub.domainRelay?.goEngine()?.pid, pid, "the relay did not die doing it");

  for (const c of clients) c.destroy();
  await waitFor("the relay closed every one of them", () => openFds(pid) <= before.fds, onRealServers);
  t.pass("no fd outlives its connection");
});

t.test("a joined stream whose reader stops holds no more than the kernel's buffers", async (t) => {
  const { hub, domain, peer } = await startRelayHub(t, "go-relay-slow", goRelayOptions());
  const train = await domain("train", "100.98.0.0/24", [
    { ip: A, cluster: "c1" },
    { ip: B, cluster: "c2" },
  ]);
  await peer("train", "c1", [A]);
  await peer("train", "c2", [B]);
  const base = { address: hub.domainRelayAddress as string, caPem: hub.pki.ca.certPem };
  let target: TLSSocket | undefined;
  const slow = (stream: InboundStream) =>
    void stream.accept().then(
      (data) => {
        target = data as TLSSocket;
        // The slow reader: it reads nothing until the test says so.
        target.pause();
      },
      () => {},
    );
  const link = await acceptFromHub({ ...base, ...train("c2") }, { globalNamespace: "agent-c2" }, slow);
  t.teardown(() => link.close());
  await waitFor("the reverse link registered", () => hub.domainRelay?.stats().reverseLinks.length === 1);
  const source = await HubConnection.dial({ ...base, ...train("c1") }, systemClock);
  t.teardown(() => source.close());
  const stream = await source.open(`${B}:7000`, A);
  await waitFor("the target's end", () => target !== undefined);
  const pid = hub.domainRelay?.goEngine()?.pid as number;
  const idle = rss(pid);

  stream.write(Buffer.alloc(SENT, 7));
  // Stalled: the relay's byte count stands still across two of its reports (500 ms apart).
  let last = -1;
  await waitFor(
    "the stream stalled on its reader",
    () => {
      const now = hub.domainRelay?.stats().relayedBytes ?? 0;
      const still = now > 0 && now === last;
      last = now;
      return still;
    },
    { attempts: 240, everyMs: 700 },
  );
  const stalled = rss(pid);
  t.comment(`relay RSS ${mib(idle)} before, ${mib(stalled)} stalled after ${mib(last)} relayed`);
  t.ok(last < SENT, `the relay moved ${mib(last)} of ${mib(SENT)}: the reader holds the rest back`);
  t.ok(
    stalled - idle < SLOW_READER_GROWTH_BOUND,
    `RSS grew ${mib(stalled - idle)} < ${mib(SLOW_READER_GROWTH_BOUND)} under the slow reader`,
  );

  // The reader reads again: every byte arrives, in order.
  let received = 0;
  let wrong = 0;
  const reader = target as TLSSocket;
  reader.on("data", (chunk: Buffer) => {
    received += chunk.length;
    if (chunk.some((byte) => byte !== 7)) wrong++;
  });
  reader.resume();
  await waitFor("every byte arrived", () => received === SENT, onRealServers);
  t.equal(wrong, 0, "the bytes are the ones sent");
});
