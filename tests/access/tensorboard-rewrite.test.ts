// The pieces behind the TensorBoard route one by one: what the page rewrite moves and leaves, the
// cookies that cross the proxy each way, and the proxy login's tickets (scope, expiry, bounds),
// the last on a real HTTP server on 127.0.0.1.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { brotliCompressSync, gzipSync } from "node:zlib";
import t from "tap";
import { podCookies, podSetCookie, responseHeaders } from "../../operators/access/proxy/headers.ts";
import { createProxyLogin } from "../../operators/access/proxy/proxy-login.ts";
import { decodeBody, rewriteRootPaths } from "../../operators/access/proxy/rewrite.ts";
import { FakeClock } from "../../operators/lib/clock.ts";

const PREFIX = "/api/v1/rlinf.io/v1alpha1/tasks/t/tensorboard";

t.test("root paths move under the prefix; nothing else does", async (t) => {
  const page = [
    `<script src="/a.js"></script><link href='/s.css'><form action=/go>`,
    `<img src="//cdn.example/x.png"><a href="https://x.example/">x</a><img src="./rel.png"><a href="rel">r</a>`,
    `<style>@font-face{src:url(/font/a.woff2)} .b{background:url( "/b.png")} .c{background:url('//cdn/c.png')}</style>`,
    `<img src="data:image/png;base64,AAAA"><div data-src="/not-an-attribute-we-know">`,
  ].join("\n");
  const out = rewriteRootPaths(page, PREFIX);
  t.match(out, `src="${PREFIX}/a.js"`);
  t.match(out, `href='${PREFIX}/s.css'`);
  t.match(out, `action=${PREFIX}/go`);
  t.match(out, `url(${PREFIX}/font/a.woff2)`);
  t.match(out, `url( "${PREFIX}/b.png")`);
  for (const kept of [
    `src="//cdn.example/x.png"`,
    `href="https://x.example/"`,
    `src="./rel.png"`,
    `href="rel"`,
    `url('//cdn/c.png')`,
    `src="data:image/png;base64,AAAA"`,
    `data-src="/not-an-attribute-we-know"`,
  ])
    t.ok(out.includes(kept), `kept: ${kept}`);
});

t.test("compressed pages are decoded within the bound", async (t) => {
  const page = Buffer.from("<style>a{background:url(/x.png)}</style>");
  t.same(await decodeBody(gzipSync(page), "gzip", 1024), page);
  t.same(await decodeBody(brotliCompressSync(page), "br", 1024), page);
  t.same(await decodeBody(page, undefined, 1024), page);
  await t.rejects(
    decodeBody(gzipSync(Buffer.alloc(50 * 1024 * 1024)), "gzip", 1024 * 1024),
    /over 1048576 bytes decoded/,
  );
  await t.rejects(decodeBody(page, "zstd", 1024), /zstd content-encoding cannot be rewritten/);
  await t.rejects(decodeBody(page, "gzip", 1024), /does not decode/);
});

t.test("cookies across the proxy", async (t) => {
  t.equal(
    podCookies("a=1; rlark-proxy=ticket; rlark-proxy-x=2"),
    "a=1; rlark-proxy-x=2",
    "only the hub's cookie goes",
  );
  t.equal(podCookies("rlark-proxy=ticket"), undefined, "nothing left, no header");
  t.equal(podCookies(undefined), undefined);
  const prefix = "/api/v1/namespaces/n/pods/p/proxy/80";
  t.equal(podSetCookie("s=1", prefix), `s=1; Path=${prefix}/`, "no Path: the pod's root");
  t.equal(
    podSetCookie("s=1; Path=/app; Domain=hub.example; HttpOnly; SameSite=Lax", prefix),
    `s=1; Path=${prefix}/app; HttpOnly; SameSite=Lax`,
    "Path moved under the prefix, Domain dropped",
  );
  t.equal(podSetCookie("rlark-proxy=forged; Path=/", prefix), undefined, "the hub's cookie name is refused");
  t.equal(podSetCookie("__Host-s=1; Path=/; Secure", prefix), undefined, "a __Host- cookie cannot move");
  t.same(
    responseHeaders(
      {
        "content-type": "text/javascript",
        "service-worker-allowed": "/",
        "clear-site-data": '"*"',
        location: "/next",
        "set-cookie": ["s=1; Path=/", "rlark-proxy=forged"],
      },
      prefix,
    ),
    { "content-type": "text/javascript", location: `${prefix}/next`, "set-cookie": [`s=1; Path=${prefix}/`] },
    "no service worker above the prefix, no clearing the hub's origin",
  );
});

t.test("the proxy login's tickets", async (t) => {
  const clock = new FakeClock(1_000_000);
  const login = createProxyLogin({
    sameOrigin: () => true,
    ttlSeconds: 60,
    maxPerSubject: 2,
    clock,
  });
  const lastToken: { value?: string } = {};
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname === "/mint") {
      const token = req.headers.authorization ?? "";
      void login.handle(req, res, token, { subject: token.split(":")[0] ?? "", role: "user" });
      return;
    }
    lastToken.value = login.tokenFor(req as IncomingMessage, url.pathname);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const mint = async (token: string, path: string) => {
    const response = await fetch(`${base}/mint`, {
      method: "POST",
      headers: { authorization: token, "content-type": "application/json" },
      body: JSON.stringify({ path }),
    });
    return { status: response.status, cookie: response.headers.get("set-cookie")?.split(";")[0] ?? "" };
  };
  const use = async (cookie: string, path: string) => {
    lastToken.value = undefined;
    await fetch(`${base}${path}`, { headers: { cookie } });
    return lastToken.value;
  };
  const pod = "/api/v1/namespaces/n/pods/p/proxy/80/";

  const first = await mint("alice:1", `${pod}deep/page?x=1`);
  t.equal(first.status, 200);
  t.equal(await use(first.cookie, `${pod}other`), "alice:1", "the whole route, not only the page asked for");
  t.equal(await use(first.cookie, "/api/v1/namespaces/n/pods/p/proxy/81/"), undefined, "not another port");
  t.equal(
    await use(first.cookie, `${pod}../../../../../pods/q/proxy/80/`),
    undefined,
    "no way out by dot segments",
  );
  t.equal(
    (await mint("alice:1", "/api/v1/namespaces/n/pods/p/proxy/80/../../../../../../source")).status,
    400,
  );
  t.equal((await mint("alice:1", "/api/v1/namespaces/n/pods/p/log")).status, 400, "a log is no proxy");

  const second = await mint("alice:2", pod);
  const third = await mint("alice:3", pod);
  t.equal(await use(first.cookie, pod), undefined, "a third ticket for one User retires the oldest");
  t.equal(await use(second.cookie, pod), "alice:2");
  t.equal(await use(`${second.cookie}; ${third.cookie}`, pod), "alice:2", "any valid one of several");
  t.equal(await use("rlark-proxy=made-up", pod), undefined, "a made-up ticket opens nothing");
  clock.advance(61_000);
  t.equal(await use(third.cookie, pod), undefined, "expired");
});
