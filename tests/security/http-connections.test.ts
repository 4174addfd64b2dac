// issue 31 item 11: the hub's HTTP port held 1,500 half-sent requests for 17 s and more. Now one
// address holds at most its share of connections, all addresses together at most the hub's cap,
// requests whose headers do not arrive in time are closed, and a well-formed request from another
// client is answered meanwhile; an event stream (SSE) stays open past every timeout.
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { jobYaml, rawTaskYaml } from "../helpers/job-yaml.ts";
import { rlark } from "../helpers/rlark-cli.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

interface Held {
  socket: net.Socket;
  received: string;
  closed: boolean;
}

/** Connections from `localAddress` (any of 127/8 reaches a hub on 127.0.0.1) that send `bytes` and stall. */
function holdConnections(url: string, localAddress: string, count: number, bytes: string): Held[] {
  const { hostname, port } = new URL(url);
  return Array.from({ length: count }, () => {
    const socket = net.connect({ host: hostname, port: Number(port), localAddress });
    const held: Held = { socket, received: "", closed: false };
    socket.on("connect", () => socket.write(bytes));
    socket.on("data", (chunk: Buffer) => (held.received += chunk.toString()));
    socket.on("error", () => {});
    socket.on("close", () => (held.closed = true));
    return held;
  });
}

const settled = (held: Held[]) =>
  held.every((h) => h.closed || (h.socket.readyState === "open" && h.socket.bytesWritten > 0));
const open = (held: Held[]) => held.filter((h) => !h.closed).length;

t.test(
  "half-sent requests are capped per address and in all, and closed at the header timeout",
  async (t) => {
    const { hub } = await startHubOnGit(t, {
      httpLimits: { maxConnections: 70, maxConnectionsPerAddress: 40, headersTimeoutMs: 3000 },
    });
    const flood = holdConnections(
      hub.url,
      "127.0.0.2",
      300,
      "GET /healthz HTTP/1.1\r\nHost: hub\r\nX-Slow: ",
    );
    const silent = holdConnections(hub.url, "127.0.0.3", 10, "");
    t.teardown(() => {
      for (const h of [...flood, ...silent]) h.socket.destroy();
    });
    await waitFor(
      "the flood's connections admitted or refused",
      () => settled(flood) && open(flood) <= 40,
      onRealServers,
    );
    t.ok(open(flood) <= 40, "one address holds at most its 40 connections");

    const answered = await fetch(`${hub.url}/healthz`);
    t.equal(answered.status, 200, "a well-formed request from another address is answered meanwhile");
    t.equal(await answered.text(), "ok\n");

    await waitFor(
      "every half-sent request closed",
      () => open(flood) === 0 && open(silent) === 0,
      onRealServers,
    );
    const timedOut = flood.filter((h) => h.received.startsWith("HTTP/1.1 408"));
    t.ok(
      timedOut.length > 0 && timedOut.length <= 40,
      "the held ones are answered 408 at the header timeout",
    );
    t.ok(
      flood.every((h) => h.received === "" || h.received.startsWith("HTTP/1.1 408")),
      "the rest were closed unanswered",
    );
    t.equal((await fetch(`${hub.url}/healthz`)).status, 200, "the hub still answers afterwards");

    // Two addresses each within their share, together over the hub's cap of 70.
    const a = holdConnections(hub.url, "127.0.0.4", 40, "GET / HTTP/1.1\r\n");
    const b = holdConnections(hub.url, "127.0.0.5", 40, "GET / HTTP/1.1\r\n");
    t.teardown(() => {
      for (const h of [...a, ...b]) h.socket.destroy();
    });
    await waitFor(
      "both floods admitted or refused",
      () => settled([...a, ...b]) && open(a) + open(b) <= 70,
      onRealServers,
    );
    t.ok(open(a) + open(b) <= 70, "all addresses together hold at most the hub's 70 connections");
  },
);

t.test("an event stream stays open past the header, request and keep-alive timeouts", async (t) => {
  const { hub, git } = await startHubOnGit(t, {
    dashboard: true,
    httpLimits: { headersTimeoutMs: 1000, requestTimeoutMs: 1500, keepAliveTimeoutMs: 500 },
    files: { "a.yaml": jobYaml("first", [rawTaskYaml({ command: ["true"] })]) },
  });
  await waitFor("the first Job from git", () => hub.store.get("Job", undefined, "first"), onRealServers);
  const controller = new AbortController();
  t.teardown(() => controller.abort());
  // Naming the Job to come, as a page showing it would: the stream sends only named Jobs.
  const response = await fetch(`${hub.url}/api/v1/events?jobs=second`, {
    headers: { authorization: `Bearer ${hub.adminToken}` },
    signal: controller.signal,
  });
  t.equal(response.status, 200);
  let text = "";
  let ended = false;
  void (async () => {
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>)
        text += Buffer.from(chunk).toString();
    } catch {}
    ended = true;
  })();
  await waitFor("the snapshot", () => text.includes("event: snapshot"), onRealServers);
  // Longer than all three timeouts together: a stream they cut would be gone by now.
  await new Promise((resolve) => setTimeout(resolve, 4000));
  t.notOk(ended, "the stream is still open");
  await git.commit({ "b.yaml": jobYaml("second", [rawTaskYaml({ command: ["true"] })]) });
  await waitFor("the new Job on the same stream", () => /"name":"second"/.test(text), onRealServers);
  t.notOk(ended, "and still delivers changes");
});

t.test("the limits' and public URL's flags refuse values that cannot work", async (t) => {
  const dataDir = await mkdtemp(path.join(tmpdir(), "rlark-http-flags-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  for (const [flags, message] of [
    [["--public-url", "ftp://rlark.example.com"], /--public-url: .*expected http:\/\/ or https:\/\//],
    [["--public-url", "https://user:pw@rlark.example.com"], /--public-url: .*no user name or password/],
    [["--http-headers-timeout", "10m"], /--http-headers-timeout: longer than --http-request-timeout/],
    [["--http-max-connections", "0"], /--http-max-connections.*expected a whole number above 0/],
    [["--proxy-timeout", "0s"], /--proxy-timeout: expected a duration of at least 1ms/],
  ] as const) {
    const run = await rlark(["hub", "--data-dir", path.join(dataDir, "d"), "--repo", dataDir, ...flags]);
    t.equal(run.code, 2, `${flags.join(" ")} is a usage error`);
    t.match(run.stderr, message);
  }
});
