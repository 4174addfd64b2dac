import t from "tap";
import { PLAN_MARKER } from "../../operators/feedback/plan-comment.ts";
import { PLAN_CONTEXT } from "../../operators/feedback/pull-requests.ts";
import { FakeClock } from "../../operators/lib/clock.ts";
import { gpuJob, pullRequestPayload, settle, setupFixture, TOKEN } from "./pull-requests-fixture.ts";

const COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments";

t.test(
  "a clean pull request gets one plan comment with a summary table and details, and a success status",
  async (t) => {
    const f = await setupFixture(t);
    const sha = await f.pushPull(2, { "jobs/train.yaml": gpuJob("train", 2) });
    const answer = await f.deliver(pullRequestPayload("opened", sha));
    t.equal(answer.status, 202, answer.message);
    const status = await settle("rlark/plan success", () => {
      const s = f.github.status(sha, PLAN_CONTEXT);
      return s && s.state !== "pending" ? s : undefined;
    });
    t.equal(status.state, "success");
    t.match(status.description, /1 to create, 0 to change, 0 to delete/);
    t.equal(status.targetUrl, "https://rlark.example.test/");
    t.ok(
      f.github.statuses.some((s) => s.sha === sha && s.state === "pending"),
      "pending was set while planning",
    );
    const comments = [...f.github.comments.values()].filter((c) => c.issue === 2);
    t.equal(comments.length, 1);
    const body = comments[0]?.body ?? "";
    t.ok(body.startsWith(PLAN_MARKER), "the hidden marker comes first");
    t.match(body, /\| Created \| Changed \| Deleted \|/);
    t.match(body, /<details><summary>➕ create Job <code>train<\/code>/);
    t.match(body, /\+\s+nvidia\.com\/gpu: "2"/, "the details show the object's YAML");
    t.match(
      body,
      /\| train \| trainer \| beijing \| gpu-node-01×1 \|/,
      "the placement preview names the cluster",
    );
    t.match(body, /\| lab \| `10\.0\.1\.0\/29` \| 6 \| 0 \| 1 \| 5 \|/, "the Domain pool impact");
    t.equal(f.github.reviews.length, 0, "no inline findings on a clean pull request");
    t.ok(
      f.github.requests.every((r) => r.authorization === `token ${TOKEN}`),
      "every API call carries the hub's token",
    );
    t.same(f.github.violations, [], "every request and response matches GitHub's OpenAPI description");
  },
);

t.test("an invalid pull request gets its errors inline at file and line and a failure status", async (t) => {
  const f = await setupFixture(t);
  const bad = gpuJob("broken", 1).replace("  tasks:\n", "  retries: 3\n  tasks:\n");
  const sha = await f.pushPull(2, { "jobs/broken.yaml": bad });
  await f.deliver(pullRequestPayload("opened", sha));
  const status = await settle("rlark/plan failure", () => {
    const s = f.github.status(sha, PLAN_CONTEXT);
    return s && s.state !== "pending" ? s : undefined;
  });
  t.equal(status.state, "failure");
  t.match(status.description, /invalid: 1 error/);
  t.equal(f.github.reviews.length, 1, "one review carries the inline findings");
  const review = f.github.reviews[0]?.body as {
    commit_id: string;
    comments: { path: string; line: number; body: string }[];
  };
  t.equal(review.commit_id, sha);
  t.equal(review.comments.length, 1);
  t.equal(review.comments[0]?.path, "jobs/broken.yaml");
  t.equal(review.comments[0]?.line, 7, "at the line of the unknown field");
  t.match(review.comments[0]?.body, /retries/);
  const body = [...f.github.comments.values()][0]?.body ?? "";
  t.match(body, /❌ RLark plan: invalid: 1 error/);
  t.match(body, /#### Validation errors/);
  t.match(
    body,
    /\[jobs\/broken\.yaml:7\]\(https:\/\/github\.com\/Codertocat\/Hello-World\/blob\/[0-9a-f]{40}\/jobs\/broken\.yaml#L7\)/,
  );
  t.same(f.github.violations, []);
});

t.test("a pull request whose Job cannot be placed says why, per the placement controller", async (t) => {
  const f = await setupFixture(t);
  const sha = await f.pushPull(2, { "jobs/huge.yaml": gpuJob("huge", 64) });
  await f.deliver(pullRequestPayload("opened", sha));
  const status = await settle("rlark/plan answered", () => {
    const s = f.github.status(sha, PLAN_CONTEXT);
    return s && s.state !== "pending" ? s : undefined;
  });
  t.equal(status.state, "success", "capacity is not a verdict on the change: the Job waits for room");
  const body = [...f.github.comments.values()][0]?.body ?? "";
  t.match(body, /1 Job cannot be placed now/);
  t.match(body, /\| huge \| \| \| ⚠️ cannot be placed: .*nvidia\.com\/gpu/);
  t.same(f.github.violations, []);
});

t.test("a second push edits the same comment instead of adding one", async (t) => {
  const f = await setupFixture(t);
  const first = await f.pushPull(2, { "jobs/train.yaml": gpuJob("train", 1) });
  await f.deliver(pullRequestPayload("opened", first));
  await settle("first review", () => f.github.status(first, PLAN_CONTEXT)?.state === "success");
  const [comment] = [...f.github.comments.values()];
  t.ok(comment);
  const second = await f.pushPull(2, { "jobs/train.yaml": gpuJob("train", 4) });
  t.not(second, first);
  await f.deliver(pullRequestPayload("synchronize", second));
  await settle("second review", () => f.github.status(second, PLAN_CONTEXT)?.state === "success");
  t.equal(f.github.comments.size, 1, "still one comment");
  t.equal(f.github.requests.filter((r) => r.method === "POST" && r.operation === COMMENTS).length, 1);
  t.equal(f.github.requests.filter((r) => r.method === "PATCH").length, 1, "edited in place");
  t.match(comment?.body, new RegExp(`Revision \`${second.slice(0, 7)}\``), "the comment shows the new head");
  t.match(comment?.body, /nvidia\.com\/gpu: "4"/);
  t.same(f.github.violations, []);
});

t.test("a 502 from GitHub is retried and the comment is made once", async (t) => {
  const f = await setupFixture(t);
  f.github.fail("POST", COMMENTS, 502, 1);
  f.github.fail("POST", "/repos/{owner}/{repo}/statuses/{sha}", 502, 2);
  const sha = await f.pushPull(2, { "jobs/train.yaml": gpuJob("train", 1) });
  await f.deliver(pullRequestPayload("opened", sha));
  await settle("success after retries", () => f.github.status(sha, PLAN_CONTEXT)?.state === "success");
  t.equal(
    f.github.requests.filter((r) => r.method === "POST" && r.operation === COMMENTS).length,
    2,
    "tried twice",
  );
  t.equal(f.github.comments.size, 1, "one comment");
  t.same(f.github.violations, []);
});

t.test("a forged signature is refused with 401 and nothing is fetched or posted", async (t) => {
  const f = await setupFixture(t);
  const sha = await f.pushPull(2, { "jobs/train.yaml": gpuJob("train", 1) });
  const answer = await f.deliver(pullRequestPayload("opened", sha), { secret: "not the secret" });
  t.equal(answer.status, 401);
  t.match(answer.message, /X-Hub-Signature-256/);
  await f.reviewer.idle();
  t.equal(f.github.requests.length, 0);
});

t.test("a duplicate delivery does no harm: one review, one comment", async (t) => {
  const f = await setupFixture(t);
  const sha = await f.pushPull(2, {
    "jobs/broken.yaml": gpuJob("x", 1).replace("  tasks:\n", "  retries: 3\n  tasks:\n"),
  });
  const payload = pullRequestPayload("opened", sha);
  t.equal((await f.deliver(payload, { delivery: "d-1" })).status, 202);
  const again = await f.deliver(payload, { delivery: "d-1" });
  t.equal(again.status, 200, "a replay is answered 200 and does nothing");
  t.match(again.message, /duplicate delivery d-1/);
  // The same head under another delivery id (a redelivery from the settings page) is also one review.
  await f.deliver(payload, { delivery: "d-2" });
  await settle("review", () => f.github.status(sha, PLAN_CONTEXT)?.state === "failure");
  await f.reviewer.idle();
  t.equal(f.github.comments.size, 1);
  t.equal(f.github.reviews.length, 1, "inline findings posted once");
  t.equal(f.github.statuses.filter((s) => s.sha === sha && s.state === "failure").length, 1);
});

t.test("open pull requests are polled when no webhook arrives", async (t) => {
  const f = await setupFixture(t);
  const sha = await f.pushPull(2, { "jobs/train.yaml": gpuJob("train", 1) });
  f.github.pulls = [{ number: 2, headSha: sha, headRef: "changes", baseRef: "master" }];
  await f.reviewer.poll();
  await settle("polled review", () => f.github.status(sha, PLAN_CONTEXT)?.state === "success");
  await f.reviewer.poll();
  await f.reviewer.idle();
  t.equal(
    f.github.statuses.filter((s) => s.sha === sha).length,
    2,
    "a second poll of the same head does nothing",
  );
  t.same(f.github.violations, []);
});

t.test("a review that fails while GitHub is down is retried until it gets through", async (t) => {
  const f = await setupFixture(t);
  // More failures than octokit's own retries absorb: the first review attempt fails whole.
  f.github.fail("POST", "/repos/{owner}/{repo}/statuses/{sha}", 502, 6);
  const sha = await f.pushPull(2, { "jobs/train.yaml": gpuJob("train", 1) });
  await f.deliver(pullRequestPayload("opened", sha));
  await settle("review after the outage", () => f.github.status(sha, PLAN_CONTEXT)?.state === "success");
  const statusCalls = f.github.requests.filter((r) => r.operation === "/repos/{owner}/{repo}/statuses/{sha}");
  t.ok(statusCalls.length >= 8, "every failed call was made and retried");
  t.equal(f.github.comments.size, 1);
  t.same(f.github.violations, []);
});

t.test("start() polls open pull requests at once and again every interval", async (t) => {
  const clock = new FakeClock();
  const f = await setupFixture(t, { pollIntervalMs: 60_000, clock });
  const first = await f.pushPull(2, { "jobs/train.yaml": gpuJob("train", 1) });
  f.github.pulls = [{ number: 2, headSha: first, headRef: "changes", baseRef: "master" }];
  f.reviewer.start();
  await settle("first poll's review", () => f.github.status(first, PLAN_CONTEXT)?.state === "success");
  const second = await f.pushPull(2, { "jobs/train.yaml": gpuJob("train", 2) });
  f.github.pulls = [{ number: 2, headSha: second, headRef: "changes", baseRef: "master" }];
  await settle("the next poll to be scheduled", () => clock.pending === 1 || undefined);
  t.equal(f.github.status(second, PLAN_CONTEXT), undefined, "nothing before the interval");
  clock.advance(60_000);
  await settle("second poll's review", () => f.github.status(second, PLAN_CONTEXT)?.state === "success");
  t.equal(f.github.comments.size, 1);
});
