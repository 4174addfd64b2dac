// The hub's Go relay engine (`--domain-relay-engine go`, ADR 0007's third decision) under faults:
// `rlark-net relay` killed with -9 is restarted by the hub and takes new streams again; a stream
// open across the kill ends on both nodeservers; its own JSON log lines reach the hub's logger.
// Frozen (SIGSTOP) past a ticket's life, a joined stream stalls and carries on after.
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import type { TLSSocket } from "node:tls";
import t, { type Test } from "tap";
import { systemClock } from "../../operators/lib/clock.ts";
import type { Logger } from "../../operators/lib/logger.ts";
import { acceptFromHub, HubConnection, type InboundStream } from "../../operators/network/index.ts";
import { type KeepaliveOptions, RELAY_KEEPALIVE } from "../../operators/network/session-keepalive.ts";
import { goRelayOptions } from "../helpers/relay-engine.ts";
import { startRelayHub } from "../helpers/relay-hub.ts";
import { resettableProxy } from "../helpers/store-through-proxy.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const A = "100.99.0.10";
const B = "100.99.0.20";

interface Line {
  level: string;
  message: string;
  fields: Record<string, unknown>;
}

/**
 * A hub with the Go relay, a Domain over clusters c1 and c2, and helpers for their nodeservers'
 * links. With `cuttable`, the links reach the relay through a proxy the test can silence, and
 * ping it every `keepalive.everyMs`.
 */
async function goBed(t: Test, cuttable?: { keepalive: KeepaliveOptions }) {
  const lines: Line[] = [];
  const record =
    (level: string) =>
    (message: string, fields: Record<string, unknown> = {}) =>
      lines.push({ level, message, fields });
  const logger: Logger = { info: record("info"), warn: record("warn"), error: record("error") };
  const { hub, dir, domain, peer } = await startRelayHub(t, "go-relay", { ...goRelayOptions(), logger });
  const train = await domain("train", "100.99.0.0/24", [
    { ip: A, cluster: "c1" },
    { ip: B, cluster: "c2" },
  ]);
  await peer("train", "c1", [A]);
  await peer("train", "c2", [B]);
  const relay = hub.domainRelayAddress as string;
  const cut = cuttable ? await resettableProxy("127.0.0.1", Number(relay.split(":")[1])) : undefined;
  if (cut)
    t.teardown(() => {
      void cut.close();
      cut.reset();
    });
  const base = { address: cut ? `127.0.0.1:${cut.port}` : relay, caPem: hub.pki.ca.certPem };
  const keepalive = cuttable?.keepalive ?? RELAY_KEEPALIVE;
  const targets: TLSSocket[] = [];
  const echo = (stream: InboundStream) =>
    void stream.accept().then(
      (data) => {
        targets.push(data as TLSSocket);
        data.pipe(data);
      },
      () => {},
    );
  const links: { close(): void }[] = [];
  t.teardown(() => {
    for (const l of links) l.close();
  });
  /** c2's reverse link, up and registered at the hub. */
  const link = async () => {
    const reverse = await acceptFromHub(
      { ...base, ...train("c2") },
      { globalNamespace: "agent-c2" },
      echo,
      keepalive,
    );
    links.push(reverse);
    await waitFor("the reverse link registered", () => hub.domainRelay?.stats().reverseLinks.length === 1);
    return reverse;
  };
  const source = async () => {
    const connection = await HubConnection.dial({ ...base, ...train("c1") }, systemClock, keepalive);
    t.teardown(() => connection.close());
    return connection;
  };
  /** Waits until a new stream crosses: the reverse link made again if the hub has none (as the
   * nodeserver's loops do), a new source connection each try. */
  const newStream = (what: string) =>
    waitFor(
      what,
      async () => {
        if ((hub.domainRelay?.stats().reverseLinks.length ?? 0) === 0) await link();
        const again = await (await source()).open(`${B}:7000`, A);
        const echoed = await roundTrip(again, "after");
        again.destroy();
        return echoed === "after";
      },
      onRealServers,
    );
  return { hub, dir, lines, link, source, targets, cut, newStream };
}

function roundTrip(stream: NodeJS.ReadWriteStream, text: string): Promise<string> {
  stream.write(text);
  return new Promise((resolve) => stream.once("data", (chunk: Buffer) => resolve(chunk.toString())));
}

t.test(
  "the Go relay killed with -9 is restarted and joins new streams; an open one ends on both ends",
  async (t) => {
    const { hub, dir, lines, link, source, targets, newStream } = await goBed(t);
    const engine = hub.domainRelay?.goEngine();
    const pid = engine?.pid as number;
    t.ok(pid, "the hub runs rlark-net relay");
    t.equal(
      readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[1],
      "relay",
      "as rlark-net's relay mode",
    );
    // The control and TLS sockets are the hub's alone.
    for (const name of ["control.sock", "tls.sock"])
      t.equal(statSync(path.join(dir, "hub", "relay", name)).mode & 0o777, 0o600, `${name} is 0600`);
    t.equal(statSync(path.join(dir, "hub", "relay")).mode & 0o777, 0o700, "in a 0700 folder");

    await link();
    const stream = await (await source()).open(`${B}:7000`, A);
    t.equal(await roundTrip(stream, "before"), "before", "a stream crosses the Go relay");
    t.equal(hub.domainRelay?.stats().joined, 1, "one joined stream");

    process.kill(pid, "SIGKILL");
    await waitFor("the source's end of the open stream closed", () => stream.closed);
    await waitFor("the target's end of the open stream closed", () => targets[0]?.closed === true);
    await waitFor("the hub forgot the join", () => hub.domainRelay?.stats().joined === 0);
    await waitFor("a new rlark-net relay", () => {
      const now = hub.domainRelay?.goEngine();
      return now?.pid !== undefined && now.pid !== pid && now.restarts === 1;
    });

    // New connections: the nodeservers dial again, as their reconnect loops do.
    await newStream("a new stream through the restarted relay");
    t.pass("new streams work after the restart");
    t.ok(
      lines.some(
        (l) =>
          l.level === "warn" &&
          l.message === "domain relay: rlark-net relay exited, restarting" &&
          l.fields.signal === "SIGKILL",
      ),
      "the hub logged the kill and the restart",
    );
    t.ok(
      lines.filter(
        (l) => l.message === "domain relay: rlark-net: listening" && typeof l.fields.address === "string",
      ).length >= 2,
      "each rlark-net relay's own JSON log line came through the hub's logger, its fields intact",
    );
  },
);

t.test(
  "the Go relay frozen past a ticket's life: a joined stream stalls and carries on, nothing restarted",
  async (t) => {
    const { hub, link, source } = await goBed(t);
    const pid = hub.domainRelay?.goEngine()?.pid as number;
    await link();
    const stream = await (await source()).open(`${B}:7000`, A);
    t.equal(await roundTrip(stream, "before"), "before", "a stream crosses the Go relay");

    process.kill(pid, "SIGSTOP");
    let resumed = false;
    t.teardown(() => {
      if (!resumed) process.kill(pid, "SIGCONT");
    });
    const answer = roundTrip(stream, "during");
    const early = await Promise.race([
      answer,
      new Promise((resolve) => setTimeout(() => resolve("nothing"), 12_000)),
    ]);
    t.equal(early, "nothing", "nothing crosses while the relay is frozen (12 s, past the 10 s tickets)");
    t.notOk(stream.closed, "the stream is not ended by the freeze");
    process.kill(pid, "SIGCONT");
    resumed = true;
    t.equal(await answer, "during", "what was written during the freeze arrives, in order, after it");
    t.equal(await roundTrip(stream, "after"), "after", "the same stream carries on");
    t.equal(hub.domainRelay?.goEngine()?.pid, pid, "the hub did not restart the frozen relay");
    const again = await (await source()).open(`${B}:7000`, A);
    t.equal(await roundTrip(again, "new"), "new", "a new stream joins");
    again.destroy();
    stream.destroy();
  },
);

t.test(
  "the links to the relay cut (silence, no reset): the nodeserver's sessions see it by their PINGs and connect again",
  async (t) => {
    const keepalive = { everyMs: 500, missed: 3 };
    const { link, source, cut, newStream } = await goBed(t, { keepalive });
    const reverse = await link();
    let reverseClosed = false;
    void reverse.closed.then(() => {
      reverseClosed = true;
    });
    const connection = await source();
    const stream = await connection.open(`${B}:7000`, A);
    t.equal(await roundTrip(stream, "before"), "before", "a stream crosses the relay through the path");

    cut?.freeze();
    const cutAt = Date.now();
    await waitFor("the pooled connection taken for cut", () => connection.closed, onRealServers);
    await waitFor("the reverse link taken for cut", () => reverseClosed, onRealServers);
    const seen = Date.now() - cutAt;
    t.comment(`both ends let go of the cut sessions in ${seen} ms (PINGs every 500 ms, 3 missed)`);

    cut?.thaw();
    // The nodeserver's loops connect again (nodeserver.ts): here by hand, as they would.
    await newStream("a new stream over new links once the path is back");
    t.pass("new streams work after the cut");
    stream.destroy();
  },
);
