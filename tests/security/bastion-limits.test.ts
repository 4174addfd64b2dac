// Issue 31, item 9: the per-user session limit holds under a burst (each access takes its place
// before anything is awaited), for SSH forwards through the real OpenSSH client and for HTTP
// proxy requests alike; and a proxied request that moves no bytes either way for the idle
// timeout is cut instead of being held open forever.
import { connect, type Socket } from "node:net";
import t from "tap";
import { hashPassword } from "../../operators/dashboard/index.ts";
import { podJobYaml, policyYaml, sshForward, startBastion, userYaml } from "../access/bastion-fixture.ts";
import { FAST, login } from "../dashboard/dashboard-hub.ts";
import { freePort } from "../helpers/free-port.ts";
import { jobYaml, rawTaskYaml } from "../helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const POD = "ports-main-0";
const LIMIT = 4;
const BURST = 40;

/**
 * A pod with a ticker port (a byte every 200 ms to every connection: a forward to it never idles)
 * and an HTTP port whose every answer sends its headers and one line, then nothing more.
 */
function portsJobYaml(tick: number, http: number): string {
  const script = [
    `require("node:net").createServer((s) => { s.on("error", () => {}); const i = setInterval(() => s.write("t"), 200); s.on("close", () => clearInterval(i)); }).listen(${tick}, "127.0.0.1");`,
    `require("node:http").createServer((q, r) => { r.writeHead(200, { "content-type": "text/plain" }); r.write("first\\\\n"); }).listen(${http}, "127.0.0.1");`,
  ].join(" ");
  return jobYaml("ports", [rawTaskYaml({ kind: "Deployment", command: [process.execPath, "-e", script] })]);
}

/** Connects to 127.0.0.1:`port`; resolves whether a byte came back before the socket closed. */
function answers(port: number): Promise<{ socket: Socket; got: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("error", () => {});
    socket.once("data", () => resolve({ socket, got: true }));
    socket.once("close", () => resolve({ socket, got: false }));
  });
}

t.test("the session limit holds under a burst, and a silent proxied request idles out", async (t) => {
  const tick = await freePort();
  const http = await freePort();
  const password = await hashPassword("alice pw", FAST);
  const b = await startBastion(t, {
    users: ["alice"],
    pods: [POD],
    hub: { dashboard: true, access: { maxSessionsPerUser: LIMIT, idleTimeoutMs: 3_000 } },
    files: (keys) => ({
      "users.yaml": `${userYaml("alice", ["user"], [keys.alice as string])}  passwordHash: "${password}"\n`,
      "job.yaml": podJobYaml("vision"),
      "ports.yaml": portsJobYaml(tick, http),
      "policy.yaml": policyYaml(
        "alice-ports",
        "  subjects:\n    users: [alice]\n  verbs: [forward, proxy]\n",
      ),
    }),
  });
  const { hub } = b.running;

  await t.test(`${BURST} forwards at once through one ssh -L: at most ${LIMIT} open`, async (t) => {
    const local = await freePort();
    const forward = sshForward(t, b.sshArgs("alice"), `${local}:${POD}:${tick}`);
    // ssh listening and the pod's ticker up: one forward answers; then it closes again.
    const probe = await waitFor(
      "a forward to the ticker answers",
      async () => {
        const attempt = await answers(local);
        if (!attempt.got) attempt.socket.destroy();
        return attempt.got ? attempt.socket : undefined;
      },
      onRealServers,
    );
    probe.destroy();
    await waitFor("the probe's forward closed", () => hub.bastion.open === 0, onRealServers);
    const burst = await Promise.all(Array.from({ length: BURST }, () => answers(local)));
    t.teardown(() => {
      for (const { socket } of burst) socket.destroy();
    });
    const admitted = burst.filter((a) => a.got).length;
    t.ok(
      admitted >= 1 && admitted <= LIMIT,
      `${admitted} of ${BURST} forwards got through (at most ${LIMIT})`,
    );
    t.ok(hub.bastion.open <= LIMIT, `${hub.bastion.open} accesses open`);
    const refused = (await b.audit()).filter(
      (l) => l.verb === "forward" && l.result === "denied" && /too many open sessions/.test(l.error ?? ""),
    );
    t.ok(refused.length >= BURST - LIMIT, `${refused.length} refused for the limit, audited`);
    for (const { socket } of burst) socket.destroy();
    forward.kill();
    await waitFor("the burst's forwards closed", () => hub.bastion.open === 0, onRealServers);
  });

  const token = (await login(hub, { username: "alice", password: "alice pw" })).body.token as string;
  const proxied = (signal?: AbortSignal) =>
    fetch(`${hub.url}/api/v1/namespaces/agent-local/pods/${POD}/proxy/${http}/`, {
      headers: { authorization: `Bearer ${token}` },
      ...(signal ? { signal } : {}),
    });

  await t.test(`${BURST} proxy requests at once: at most ${LIMIT} answered by the pod`, async (t) => {
    // The pod's HTTP server up (it started with the ticker): one answer's headers, then let go.
    const controller = new AbortController();
    t.teardown(() => controller.abort());
    const first = await proxied(controller.signal);
    t.equal(first.status, 200);
    controller.abort();
    await waitFor("the first request let go", () => hub.bastion.open === 0, onRealServers);
    const burst = new AbortController();
    t.teardown(() => burst.abort());
    const answers = await Promise.all(
      Array.from({ length: BURST }, () =>
        proxied(burst.signal).then(
          (response) => response.status,
          () => 0,
        ),
      ),
    );
    const fromPod = answers.filter((status) => status === 200).length;
    t.ok(fromPod >= 1 && fromPod <= LIMIT, `${fromPod} of ${BURST} reached the pod (at most ${LIMIT})`);
    t.ok(
      answers.every((status) => status === 200 || status === 403 || status === 0),
      "the others were refused",
    );
    const over = await proxied();
    t.equal(over.status, 403, "one more, while they are open: refused");
    t.match(await over.text(), /too many open sessions/, "saying why");
    burst.abort();
    await waitFor("the burst let go", () => hub.bastion.open === 0, onRealServers);
  });

  await t.test("a proxied request silent both ways is cut after the idle timeout", async (t) => {
    const controller = new AbortController();
    t.teardown(() => controller.abort());
    const response = await proxied(controller.signal);
    t.equal(response.status, 200);
    let ended: string | undefined;
    void (async () => {
      try {
        for await (const _chunk of response.body as ReadableStream<Uint8Array>);
        ended = "end";
      } catch (error) {
        ended = String(error);
      }
    })();
    // The pod sent its first line and nothing since: the hub cuts the request (not the client).
    await waitFor("the silent request cut", () => ended, onRealServers);
    t.not(ended, "end", `the body broke off (${ended})`);
    const cut = await waitFor(
      "the cut audited",
      async () =>
        (await b.audit()).find((l) => l.via === "http" && l.verb === "proxy" && /idle/.test(l.error ?? "")),
      onRealServers,
    );
    t.match(cut, { actor: "alice", result: "error" });
  });
});
