// A Task's TensorBoard behind the hub (seed 000 §19) and the browser login for proxy URLs, on real
// parts: TensorBoard 2.21 from PyPI (hack/tools/build tensorboard) runs as a process-runtime pod
// over a real event file written with tensorboard's own writer; a small Python HTTP server pod
// reports the headers it gets; a real Chromium logs in to the dashboard, follows the Job page's
// TensorBoard link and finds the scalar's tag on the page that loaded its scripts behind the prefix.
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import t from "tap";
import WebSocket from "ws";
import { tensorBoardPython } from "../../hack/tools/paths.ts";
import { PROXY_COOKIE } from "../../operators/access/index.ts";
import { hashPassword } from "../../operators/dashboard/index.ts";
import { FAST, login } from "../dashboard/dashboard-hub.ts";
import { launchChromium } from "../helpers/chromium.ts";
import { freePort } from "../helpers/free-port.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";
import { policyYaml, startBastion } from "./bastion-fixture.ts";
import { logIn, passwordUserYaml } from "./web-terminal-page.ts";

/** Writes three steps of the scalar `loss/train` with tensorboard's own event writer, then serves them. */
const tensorBoardMain = (port: number) => `
import sys, time
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.compat.proto.summary_pb2 import Summary
writer = EventFileWriter("logs/run1")
for step in range(3):
    value = Summary.Value(tag="loss/train", simple_value=1.0 / (step + 1))
    writer.add_event(Event(wall_time=time.time(), step=step, summary=Summary(value=[value])))
writer.close()
from tensorboard import main
sys.argv = ["tensorboard", "--logdir", "logs", "--port", "${port}", "--host", "127.0.0.1"]
main.run_main()
`;

/** Answers every request with the path and credentials it got, and sets a cookie of its own at `/`. */
const headersMain = (port: number) => `
import http.server, json
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"path": self.path, "cookie": self.headers.get("cookie"),
                           "authorization": self.headers.get("authorization")}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("set-cookie", "pod-session=from-pod; Path=/; HttpOnly")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", ${port}), Handler).serve_forever()
`;

/** A WebSocket server that answers each message with the path and cookie it was opened with. */
const socketMain = (port: number) => `
const { WebSocketServer } = require(${JSON.stringify(createRequire(import.meta.url).resolve("ws"))});
new WebSocketServer({ host: "127.0.0.1", port: ${port} }).on("connection", (ws, req) =>
  ws.on("message", (data) => ws.send(JSON.stringify({ path: req.url, text: data.toString(),
    cookie: req.headers.cookie ?? null }))));
`;

/** Opens a WebSocket; resolves with it once open, or with the status it was refused with. */
function open(url: string, headers: Record<string, string>) {
  return new Promise<{ ws?: WebSocket; status?: number }>((resolve) => {
    const ws = new WebSocket(url, { headers });
    ws.once("open", () => resolve({ ws }));
    ws.once("unexpected-response", (_req, res) => resolve({ status: res.statusCode }));
    ws.once("error", () => resolve({}));
  });
}

/** A Job of one Raw task running `script` with python (-c) or node (-e). */
function jobYaml(name: string, program: string, script: string, annotations = ""): string {
  return `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: ${name}
  labels:
    team: vision
spec:
  tasks:
    - name: main
      role: Actor
      agentType: Raw
${annotations}      raw:
        kind: Deployment
        command: [${JSON.stringify(program)}, ${program === process.execPath ? '"-e"' : '"-c"'}, ${JSON.stringify(script)}]
`;
}

t.test("TensorBoard at its Task's route, opened from the dashboard", async (t) => {
  const python = tensorBoardPython();
  const [boardPort, headersPort, socketPort] = [await freePort(), await freePort(), await freePort()];
  const [alicePw, bobPw] = await Promise.all([hashPassword("alice pw", FAST), hashPassword("bob pw", FAST)]);
  const b = await startBastion(t, {
    users: [],
    hub: { dashboard: true },
    files: () => ({
      "users.yaml": [
        passwordUserYaml("alice", ["user"], alicePw),
        passwordUserYaml("bob", ["user"], bobPw),
      ].join("---\n"),
      "policy.yaml": policyYaml("alice-proxy", "  subjects:\n    users: [alice]\n  verbs: [proxy]\n"),
      "board.yaml": jobYaml(
        "board",
        python,
        tensorBoardMain(boardPort),
        `      annotations:\n        rlark.io/tensorboard-port: "${boardPort}"\n`,
      ),
      "headers.yaml": jobYaml(
        "headers",
        execFileSync("which", ["python3"]).toString().trim(),
        headersMain(headersPort),
      ),
      "socket.yaml": jobYaml(
        "socket",
        process.execPath,
        socketMain(socketPort),
        `      annotations:\n        rlark.io/tensorboard-port: "${socketPort}"\n`,
      ),
    }),
  });
  const { hub } = b.running;
  const board = `${hub.url}/api/v1/rlinf.io/v1alpha1/tasks/board-main/tensorboard/`;
  const headersRoute = `/api/v1/namespaces/agent-local/tasks/headers-main/proxy/${headersPort}/`;
  const admin = { authorization: `Bearer ${hub.adminToken}` };
  const alice = (await login(hub, { username: "alice", password: "alice pw" })).body.token as string;
  const bob = (await login(hub, { username: "bob", password: "bob pw" })).body.token as string;
  const mint = (token: string, path: string) =>
    fetch(`${hub.url}/api/v1/proxy-login`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ path }),
    });

  const index = await waitFor(
    "TensorBoard answering through the hub",
    async () => {
      const response = await fetch(board, { headers: admin });
      return response.status === 200 ? response.text() : undefined;
    },
    { ...onRealServers, attempts: 1200 },
  );
  await waitFor(
    "the headers pod answering",
    async () => (await fetch(`${hub.url}${headersRoute}`, { headers: admin })).status === 200,
    { ...onRealServers, attempts: 1200 },
  );

  await t.test("the route: prefix off on the way in, root paths under it on the way out", async (t) => {
    t.match(index, /<meta name="tb-relative-root" content="\.\/">/, "TensorBoard's own page");
    t.notMatch(index, /url\(\/font-roboto/, "no font is left at the hub's root");
    const font =
      /url\((\/api\/v1\/rlinf\.io\/v1alpha1\/tasks\/board-main\/tensorboard\/font-roboto\/[^)]+)\)/.exec(
        index,
      )?.[1];
    t.ok(font, "the fonts moved under the prefix");
    t.equal((await fetch(`${hub.url}${font}`, { headers: admin })).status, 200, "and load from there");
    const gzipped = await fetch(board, { headers: { ...admin, "accept-encoding": "gzip" } });
    t.notMatch(await gzipped.text(), /url\(\/font-roboto/, "a compressed page is rewritten too");
    const slashless = await fetch(board.slice(0, -1), { redirect: "manual" });
    t.equal(slashless.status, 301, "the route without its slash moves to it");
    t.equal(slashless.headers.get("location"), new URL(board).pathname);
    const tasks = (await (
      await fetch(`${hub.url}/api/v1/rlinf.io/v1alpha1/tasks`, { headers: admin })
    ).json()) as {
      items: { metadata: { name: string }; status?: { tensorBoardProxy?: string } }[];
    };
    const proxyOf = (name: string) =>
      tasks.items.find((i) => i.metadata.name === name)?.status?.tensorBoardProxy;
    t.equal(proxyOf("board-main"), new URL(board).pathname, "the Task's answer names its TensorBoard");
    t.equal(proxyOf("headers-main"), undefined, "a Task that declares none has none");
    const none = await fetch(`${hub.url}/api/v1/rlinf.io/v1alpha1/tasks/headers-main/tensorboard/`, {
      headers: admin,
    });
    t.equal(none.status, 404);
    t.match(await none.text(), /declares no TensorBoard/);
  });

  await t.test("the login cookie: scoped, checked, and never passed to the pod", async (t) => {
    t.equal((await fetch(board)).status, 401, "no token, no cookie: refused");
    const minted = await mint(alice, `${new URL(board).pathname}index.js`);
    t.equal(minted.status, 200);
    const setCookie = minted.headers.get("set-cookie") ?? "";
    t.match(
      setCookie,
      new RegExp(
        `^${PROXY_COOKIE}=[\\w-]{43}; Path=/api/v1/rlinf.io/v1alpha1/tasks/board-main/tensorboard/;`,
      ),
    );
    t.match(setCookie, /; HttpOnly; SameSite=Strict/);
    const cookie = setCookie.split(";")[0] as string;
    t.equal((await fetch(board, { headers: { cookie } })).status, 200, "the cookie opens its route");
    t.equal(
      (await fetch(`${hub.url}/api/v1/rlinf.io/v1alpha1/tasks`, { headers: { cookie } })).status,
      401,
      "and nothing but proxy routes",
    );
    t.equal(
      (await fetch(`${hub.url}${headersRoute}`, { headers: { cookie } })).status,
      401,
      "nor another proxy route",
    );
    t.equal((await mint(alice, "/api/v1/source")).status, 400, "no cookie for a path that is no proxy");
    const forged = await fetch(`${hub.url}/api/v1/proxy-login`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json" },
      body: JSON.stringify({ path: headersRoute }),
    });
    t.equal(forged.status, 401, "a cookie mints no other cookie");

    const podCookie = (await mint(alice, headersRoute)).headers.get("set-cookie")?.split(";")[0] as string;
    const seen = await fetch(`${hub.url}${headersRoute}x?y=1`, {
      headers: { cookie: `${podCookie}; pod-session=earlier` },
    });
    t.equal(seen.status, 200);
    t.same(
      await seen.json(),
      { path: "/x?y=1", cookie: "pod-session=earlier", authorization: null },
      "the pod got its own cookie and none of the hub's",
    );
    t.equal(
      seen.headers.get("set-cookie"),
      `pod-session=from-pod; Path=${headersRoute}; HttpOnly`,
      "the pod's cookie is kept to the pod's prefix",
    );

    const post = (origin: string) =>
      fetch(`${hub.url}${headersRoute}form`, {
        method: "POST",
        headers: { cookie: podCookie, origin, "content-type": "text/plain" },
        body: "a=1",
      });
    t.equal(
      (await post("http://elsewhere.example:8080")).status,
      401,
      "a change from another origin is refused",
    );
    t.equal((await post(new URL(hub.url).origin)).status, 501, "one from the hub's origin reaches the pod");

    const bobCookie = (await mint(bob, new URL(board).pathname)).headers
      .get("set-cookie")
      ?.split(";")[0] as string;
    const refused = await fetch(board, { headers: { cookie: bobCookie } });
    t.equal(refused.status, 403, "a User without a proxy grant is refused");
    t.match(await refused.text(), /no AccessPolicy grants bob proxy/);
    const audit = await b.audit();
    t.ok(
      audit.some((r) => r.actor === "bob" && r.verb === "proxy" && r.result === "denied"),
      "the refusal is audited",
    );
    t.ok(
      audit.some(
        (r) =>
          r.actor === "alice" &&
          r.verb === "proxy" &&
          r.target.endsWith(`:${boardPort}`) &&
          r.result === "ok",
      ),
      "alice's reads are audited as hers",
    );
  });

  await t.test("a WebSocket on the route, opened with the cookie", async (t) => {
    const route = "/api/v1/rlinf.io/v1alpha1/tasks/socket-main/tensorboard/";
    const url = `${hub.url.replace(/^http/, "ws")}${route}feed?x=1`;
    const origin = new URL(hub.url).origin;
    const cookie = (await mint(alice, route)).headers.get("set-cookie")?.split(";")[0] as string;
    const opened = await waitFor(
      "the socket pod answering",
      async () => (await open(url, { cookie: `${cookie}; mine=1`, origin })).ws,
      { ...onRealServers, attempts: 1200 },
    );
    t.teardown(() => opened.terminate());
    const reply = new Promise<string>((resolve) =>
      opened.once("message", (data: Buffer) => resolve(data.toString())),
    );
    opened.send("hi");
    t.same(
      JSON.parse(await reply),
      { path: "/feed?x=1", text: "hi", cookie: "mine=1" },
      "prefix off, hub's cookie off",
    );
    t.match(await open(url, { origin }), { status: 401 }, "no cookie");
    t.match(
      await open(url, { cookie, origin: "http://elsewhere.example" }),
      { status: 403 },
      "another origin",
    );
    const boardCookie = (await mint(alice, new URL(board).pathname)).headers
      .get("set-cookie")
      ?.split(";")[0] as string;
    t.match(await open(url, { cookie: boardCookie, origin }), { status: 401 }, "another route's cookie");
  });

  await t.test("in Chromium", async (t) => {
    const browser = await launchChromium();
    t.teardown(() => browser.close());

    await t.test("the Job page's link opens TensorBoard, which loads behind the prefix", async (t) => {
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
      t.teardown(() => context.close());
      const page = await context.newPage();
      await logIn(page, hub.url, "alice", "alice pw");
      await page.goto(`${hub.url}/#/jobs/headers`);
      await page.locator("#job-name").waitFor();
      t.equal(await page.locator(".tensorboard-link").count(), 0, "no link for a Task without TensorBoard");
      await page.goto(`${hub.url}/#/jobs/board`);
      const link = page.locator(".tensorboard-link");
      await link.waitFor();
      const opened = context.waitForEvent("page");
      await link.click();
      const tab = await opened;
      const failed: string[] = [];
      const loaded: string[] = [];
      tab.on("response", (response) => {
        loaded.push(new URL(response.url()).pathname);
        if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
      });
      const errors: string[] = [];
      tab.on("pageerror", (error) => errors.push(error.message));
      await tab.getByText("loss/train").first().waitFor({ timeout: 60_000 });
      t.equal(new URL(tab.url()).pathname, new URL(board).pathname, "the tab is at the Task's route");
      t.ok(
        loaded.some((p) => p.startsWith(`${new URL(board).pathname}index.js`)),
        "its script came through the prefix",
      );
      t.ok(
        loaded.some((p) => p.startsWith(`${new URL(board).pathname}data/`)),
        "its data requests too",
      );
      t.same(failed, [], "nothing it asked for failed");
      t.same(errors, [], "no script errors");
      t.equal(
        await tab.evaluate(() => sessionStorage.getItem("rlark.session")),
        null,
        "the proxied page finds no session token",
      );
      const cookies = await context.cookies(board);
      t.match(
        cookies.find((c) => c.name === PROXY_COOKIE),
        {
          httpOnly: true,
          sameSite: "Strict",
          path: new URL(board).pathname,
        },
      );

      // The same browser to the headers pod: what arrives there.
      await page.evaluate(async (path) => {
        const token = (JSON.parse(sessionStorage.getItem("rlark.session") ?? "{}") as { token?: string })
          .token;
        await fetch("/api/v1/proxy-login", {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ path }),
        });
      }, headersRoute);
      await page.goto(`${hub.url}${headersRoute}first`);
      const second = await page.goto(`${hub.url}${headersRoute}second`);
      t.same(
        await second?.json(),
        { path: "/second", cookie: "pod-session=from-pod", authorization: null },
        "the browser's request reached the pod with the pod's cookie and without the hub's",
      );
    });

    await t.test("refused: a browser without login, a User without the grant", async (t) => {
      const stranger = await browser.newContext();
      t.teardown(() => stranger.close());
      const page = await stranger.newPage();
      t.equal((await page.goto(board))?.status(), 401, "no login");

      const context = await browser.newContext();
      t.teardown(() => context.close());
      const bobPage = await context.newPage();
      await logIn(bobPage, hub.url, "bob", "bob pw");
      await bobPage.goto(`${hub.url}/#/jobs/board`);
      const opened = context.waitForEvent("page");
      await bobPage.locator(".tensorboard-link").click();
      const tab = await opened;
      await tab.waitForLoadState();
      t.match(
        await tab.locator("body").textContent(),
        /no AccessPolicy grants bob proxy/,
        "bob sees the refusal",
      );
    });
  });

  await t.test("a grant or a User removed in git: the cookie opens nothing", async (t) => {
    const cookie = (await mint(alice, new URL(board).pathname)).headers
      .get("set-cookie")
      ?.split(";")[0] as string;
    t.equal((await fetch(board, { headers: { cookie } })).status, 200, "open before");
    await b.commit({ "policy.yaml": null });
    const refused = await fetch(board, { headers: { cookie } });
    t.equal(refused.status, 403, "the grant is gone");
    t.match(await refused.text(), /no AccessPolicy grants alice proxy/);
    await b.commit({ "users.yaml": passwordUserYaml("bob", ["user"], bobPw) });
    t.equal((await fetch(board, { headers: { cookie } })).status, 401, "the User is gone");
  });
});
