// Issue 31, item 8: the failed-login limit under concurrency, with real HTTP from distinct loopback
// source addresses (127.0.0.x) against a real hub. Attempts are counted before the password is
// checked, so parallel guesses cannot all slip past the count; the per-address limit stops one
// source's flood before it can lock the user out elsewhere; the per-user limit stops guessing
// spread over many sources; a lockout ends with its window.
import { request } from "node:http";
import t from "tap";
import { sourceKey } from "../../operators/dashboard/auth/index.ts";
import type { Hub } from "../../operators/hub/hub.ts";
import { exampleRepository, startDashboardHub, synced } from "../dashboard/dashboard-hub.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

/** POST /api/v1/auth/login from the loopback address `from`; the answer's status and Retry-After. */
function loginFrom(
  hub: Hub,
  from: string,
  body: Record<string, unknown>,
): Promise<{ status: number; retryAfter: string | undefined }> {
  const url = new URL("/api/v1/auth/login", hub.url);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: "POST", localAddress: from, headers: { "content-type": "application/json" }, agent: false },
      (res) => {
        res.resume();
        res.once("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: res.headers["retry-after"] as string | undefined,
          }),
        );
      },
    );
    req.once("error", reject);
    req.end(JSON.stringify(body));
  });
}

const count = (answers: { status: number }[], status: number) =>
  answers.filter((a) => a.status === status).length;

t.test(
  "40 concurrent wrong passwords from one address: only the limit is checked, and the user is not locked out",
  async (t) => {
    const git = await exampleRepository(t);
    const { hub } = await startDashboardHub(t, git, { loginLimit: { max: 5, windowMs: 60_000 } });
    await synced(hub);
    const flood = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        loginFrom(hub, "127.0.0.1", { username: "carol", password: `guess-${i}` }),
      ),
    );
    t.equal(count(flood, 401), 5, "as many checked as the per-address limit");
    t.equal(count(flood, 429), 35, "the rest refused before any password work");
    t.ok(
      flood.every((a) => a.status !== 429 || Number(a.retryAfter) > 0),
      "429 says when to retry",
    );
    const elsewhere = await loginFrom(hub, "127.0.0.2", { username: "carol", password: "correct horse" });
    t.equal(elsewhere.status, 200, "carol logs in from another address");
    const again = await loginFrom(hub, "127.0.0.1", { username: "carol", password: "correct horse" });
    t.equal(again.status, 429, "the flooding address itself waits, even with the right password");
    // one after another: attempts in flight count, so more than the limit at once would wait
    const successes = [];
    for (let i = 0; i < 8; i++)
      successes.push(await loginFrom(hub, "127.0.0.3", { username: "carol", password: "correct horse" }));
    t.equal(count(successes, 200), 8, "logins that succeed take their attempts back");
  },
);

t.test("guessing spread over many addresses locks the user; the lockout ends with its window", async (t) => {
  const git = await exampleRepository(t);
  const windowMs = 8_000;
  const { hub } = await startDashboardHub(t, git, { loginLimit: { max: 3, windowMs, maxPerUser: 6 } });
  await synced(hub);
  const sources = ["127.0.0.11", "127.0.0.12", "127.0.0.13", "127.0.0.14"];
  const guesses = await Promise.all(
    sources.flatMap((from) =>
      Array.from({ length: 5 }, (_, i) =>
        loginFrom(hub, from, { username: "carol", password: `guess-${i}` }),
      ),
    ),
  );
  t.equal(count(guesses, 401), 6, "as many checked as the per-user limit, whichever sources they came from");
  t.equal(count(guesses, 429), 14);
  const locked = await loginFrom(hub, "127.0.0.20", { username: "carol", password: "correct horse" });
  t.equal(locked.status, 429, "carol waits, from a fresh address too");
  t.equal(
    (await loginFrom(hub, "127.0.0.20", { adminToken: hub.adminToken })).status,
    200,
    "the limit is carol's: the address may log in otherwise",
  );
  await waitFor(
    "carol's login after the window",
    async () =>
      (await loginFrom(hub, "127.0.0.21", { username: "carol", password: "correct horse" })).status === 200,
    { ...onRealServers, everyMs: 250 },
  );
});

t.test("a limit's source is an IPv4 address, or an IPv6 address's /64", async (t) => {
  t.equal(sourceKey("127.0.0.1"), "127.0.0.1");
  t.equal(sourceKey("::ffff:127.0.0.2"), "127.0.0.2", "IPv4-mapped");
  t.equal(sourceKey("2001:db8:0:1::5"), "2001:db8:0:1::/64");
  t.equal(sourceKey("2001:DB8:0:1:aa:bb:cc:dd"), "2001:db8:0:1::/64", "the same /64");
  t.equal(sourceKey("1::2:3:4:5:6:7"), "1:0:2:3::/64");
});
