// The dashboard's web terminal in a real Chromium against a real hub, a process-runtime agent and
// a real pod: a full-screen program (vim) in and out, a resize reaching the program, `exit 3`
// shown as 3, a user without `shell` refused before any upgrade, and a killed agent shown as a
// broken connection, never as an exit status. The WebSocket's own guards (token, Origin, frame
// size, sessions per user) are checked with the `ws` client.
import t from "tap";
import { TERMINAL_PROTOCOL } from "../../operators/access/index.ts";
import { hashPassword } from "../../operators/dashboard/index.ts";
import { FAST, login } from "../dashboard/dashboard-hub.ts";
import { launchChromium } from "../helpers/chromium.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";
import { openWebSocket, type WebSocketAttempt } from "../helpers/websocket.ts";
import { podJobYaml, policyYaml, startBastion } from "./bastion-fixture.ts";
import { logIn, passwordUserYaml, resizeThenExit, screen, shows, statusIs } from "./web-terminal-page.ts";

const POD = "vision-main-0";

/** Opens a WebSocket to the terminal route with the `ws` client; resolves on open or refusal. */
function connect(
  url: string,
  options: { token?: string; origin?: string; protocols?: string[] },
): Promise<WebSocketAttempt> {
  const headers = {
    ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    ...(options.origin ? { origin: options.origin } : {}),
  };
  return openWebSocket(url, options.protocols ?? [TERMINAL_PROTOCOL], headers);
}

t.test("the web terminal", async (t) => {
  const [alicePw, bobPw] = await Promise.all([hashPassword("alice pw", FAST), hashPassword("bob pw", FAST)]);
  const b = await startBastion(t, {
    users: [],
    pods: [POD],
    hub: { dashboard: true, access: { maxSessionsPerUser: 3 } },
    files: () => ({
      "users.yaml": [
        passwordUserYaml("alice", ["user"], alicePw),
        passwordUserYaml("bob", ["user"], bobPw),
      ].join("---\n"),
      "job.yaml": podJobYaml("vision"),
      "policy.yaml": policyYaml("alice-shell", "  subjects:\n    users: [alice]\n  verbs: [shell]\n"),
    }),
  });
  const { hub } = b.running;
  const browser = await launchChromium();
  t.teardown(() => browser.close());
  const terminalUrl = `${hub.url}/#/terminal/agent-local/${POD}`;
  const wsUrl = `${hub.url.replace(/^http/, "ws")}/api/v1/namespaces/agent-local/pods/${POD}/terminal`;

  await t.test("a full-screen program, a resize and `exit 3` through the browser", async (t) => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    t.teardown(() => context.close());
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    await logIn(page, hub.url, "alice", "alice pw");
    await page.goto(terminalUrl);
    await statusIs(page, /^connected$/);
    await page.keyboard.type("echo hi-$((6*7))\n");
    await shows(page, /hi-42/);

    await page.keyboard.type("vim -u NONE\n");
    await shows(page, /~\s*\n\s*~/);
    await page.keyboard.type("ihello from vim");
    await shows(page, /hello from vim/);
    await page.keyboard.press("Escape");
    await page.keyboard.type(":q!\n");
    // What is typed while vim quits is vim's: wait for the shell's screen to come back.
    await waitFor("vim's screen gone", async () => !/hello from vim/.test(await screen(page)), onRealServers);
    t.pass("vim's screen is gone: it ran on the alternate screen");
    await page.keyboard.type("echo back-$((2+3))\n");
    await shows(page, /back-5/);

    await resizeThenExit(t, page);
    t.same(errors, [], "no script errors");
    const line = await waitFor(
      "the audit line",
      async () => (await b.audit()).find((r) => r.actor === "alice" && r.via === "web" && r.result === "ok"),
      onRealServers,
    );
    t.match(line, { verb: "shell", target: `local/agent-local/${POD}`, exitCode: 3 });
    t.ok(line.bytesIn > 0 && line.bytesOut > 0, "bytes counted both ways");
  });

  await t.test("refusals happen before the upgrade", async (t) => {
    const alice = (await login(hub, { username: "alice", password: "alice pw" })).body.token as string;
    const bob = (await login(hub, { username: "bob", password: "bob pw" })).body.token as string;
    t.match(await connect(wsUrl, {}), { status: 401 }, "no token");
    t.match(
      await connect(wsUrl, { token: alice, origin: "http://evil.example" }),
      { status: 403 },
      "another origin",
    );
    t.match(await connect(wsUrl, { token: hub.adminToken }), { status: 403 }, "the admin token is no User");
    const refused = await connect(wsUrl, { token: bob });
    t.match(refused, { status: 403, body: /no AccessPolicy grants bob shell/ }, "bob has no shell grant");
    t.ok(
      (await b.audit()).some((r) => r.actor === "bob" && r.via === "web" && r.result === "denied"),
      "the refusal is audited",
    );

    await t.test("a browser shows the refusal, not an exit status", async (t) => {
      const context = await browser.newContext();
      t.teardown(() => context.close());
      const page = await context.newPage();
      await logIn(page, hub.url, "bob", "bob pw");
      await page.goto(terminalUrl);
      t.match(await statusIs(page, /refused|lost/), /refused/);
    });

    await t.test("messages are bounded and sessions per user are limited", async (t) => {
      const open = await connect(wsUrl, { token: alice, origin: new URL(hub.url).origin });
      t.ok(open.ws, "same origin and a token: open");
      const closed = new Promise<number>((resolve) => open.ws?.once("close", (code) => resolve(code)));
      open.ws?.send(Buffer.alloc(65 * 1024), { binary: true });
      t.equal(await closed, 1009, "a message over 64 KiB closes the socket (message too big)");
      const held: Awaited<ReturnType<typeof connect>>[] = [];
      for (let i = 0; i < 3; i++) held.push(await connect(wsUrl, { token: alice }));
      t.teardown(async () => {
        for (const h of held) h.ws?.terminate();
        await waitFor("the terminals closed on the hub", () => hub.bastion.open === 0, onRealServers);
      });
      t.ok(
        held.every((h) => h.ws),
        "three terminals open",
      );
      const fourth = await connect(wsUrl, { token: alice });
      t.match(fourth, { status: 403, body: /too many open sessions/ });
    });
  });

  await t.test("a killed agent is a broken connection, not an exit", async (t) => {
    const context = await browser.newContext();
    t.teardown(() => context.close());
    const page = await context.newPage();
    await logIn(page, hub.url, "alice", "alice pw");
    await page.goto(terminalUrl);
    await statusIs(page, /^connected$/);
    await page.keyboard.type("echo up-$((1+1))\n");
    await shows(page, /up-2/);
    await b.agent.stop();
    const status = await statusIs(page, /lost/);
    t.match(status, /connection lost: the agent ended the session/);
    t.notMatch(status, /exit/);
  });
});
