// issue 31 item 13: `rlark up`'s "one-click login" link carried the permanent admin token. Now it
// carries a single-use code that the hub exchanges once for an admin session, within minutes.
import t from "tap";
import { FakeClock } from "../../operators/lib/clock.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";

async function exchange(hubUrl: string, code: string) {
  const response = await fetch(`${hubUrl}/api/v1/auth/login-link`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ code }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const codeOf = (link: string) =>
  new URLSearchParams(new URL(link).hash.replace(/^#\/login\?/, "")).get("code") ?? "";

t.test("a login link's code logs in once, and not after it expires", async (t) => {
  const clock = new FakeClock(Date.now());
  const { hub } = await startHubOnGit(t, { dashboard: { clock } });
  const dashboard = hub.dashboard;
  if (!dashboard) throw new Error("no dashboard");

  const link = dashboard.loginUrl(hub.url);
  t.notOk(link.includes(hub.adminToken), "the admin token is not in the link");
  t.equal(new URL(link).search, "", "nor is the code in the query, which servers and proxies log");
  const code = codeOf(link);
  t.ok(code.length >= 40, "the code is long and random");

  const first = await exchange(hub.url, code);
  t.equal(first.status, 200, "the link logs in");
  t.match(first.body, { subject: "rlark:admin-token", role: "admin" });
  t.notOk(
    JSON.stringify(first.body).includes(hub.adminToken),
    "the answer is a session, not the admin token",
  );
  const api = await fetch(`${hub.url}/api/v1/source`, {
    headers: { authorization: `Bearer ${first.body.token}` },
  });
  t.equal(api.status, 200, "and the session opens the API");

  const again = await exchange(hub.url, code);
  t.equal(again.status, 401, "a second use is refused");
  t.match(again.body.message, /used already or has expired/);

  const late = codeOf(dashboard.loginUrl(hub.url));
  clock.advance(10 * 60_000 + 1);
  t.equal((await exchange(hub.url, late)).status, 401, "an expired code is refused");

  t.equal((await exchange(hub.url, "not-a-code")).status, 401, "an unknown code is refused");
  t.equal((await exchange(hub.url, hub.adminToken)).status, 401, "and so is the admin token itself");
  const get = await fetch(`${hub.url}/api/v1/auth/login-link`);
  t.equal(get.status, 405, "only POST exchanges a code");
});
