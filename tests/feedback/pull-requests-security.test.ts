import { rm } from "node:fs/promises";
import { createServer } from "node:http";
import { type AddressInfo, connect } from "node:net";
import t from "tap";
import type { RenderedWorkload, WorkloadDryRunner } from "../../operators/feedback/plan/index.ts";
import { FORK_DRY_RUN_NOTE, PLAN_CONTEXT } from "../../operators/feedback/pull-requests.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { gpuJob, pullRequestPayload, settle, setupFixture } from "./pull-requests-fixture.ts";

function recordingRunner(
  answer: (cluster: string, w: RenderedWorkload) => Awaited<ReturnType<WorkloadDryRunner["dryRun"]>>,
) {
  const calls: { cluster: string; workload: RenderedWorkload }[] = [];
  const runner: WorkloadDryRunner = {
    async dryRun(cluster, workload) {
      calls.push({ cluster, workload });
      return answer(cluster, workload);
    },
  };
  return { runner, calls };
}

t.test(
  "a fork's pull request is planned from the base repository's refs, with nothing sent to clusters",
  async (t) => {
    // Anything that talks to the fork's own URL is a leak: record every request there.
    const forkRequests: string[] = [];
    const fork = createServer((req, res) => {
      forkRequests.push(`${req.method} ${req.url} ${req.headers.authorization ?? ""}`);
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => fork.listen(0, "127.0.0.1", resolve));
    t.teardown(() => new Promise<void>((resolve) => fork.close(() => resolve())));
    const forkUrl = `http://127.0.0.1:${(fork.address() as AddressInfo).port}/forker/Hello-World.git`;

    const { runner, calls } = recordingRunner(() => ({ state: "passed" }));
    const f = await setupFixture(t, { dryRunner: runner });
    const sha = await f.pushPull(2, {
      "jobs/train.yaml": gpuJob("train", 1),
      // A fork may carry anything; the review reads manifests as data and runs none of it.
      ".gitattributes": "*.yaml filter=evil diff=evil\n",
      "hooks/post-checkout": "#!/bin/sh\ntouch /tmp/rlark-fork-ran\n",
    });
    const payload = pullRequestPayload("opened", sha);
    Object.assign(payload.pull_request.head.repo, {
      full_name: "forker/Hello-World",
      clone_url: forkUrl,
      git_url: forkUrl.replace("http:", "git:"),
      html_url: forkUrl.replace(/\.git$/, ""),
    });
    t.equal((await f.deliver(payload)).status, 202);
    const status = await settle("fork review", () => {
      const s = f.github.status(sha, PLAN_CONTEXT);
      return s && s.state !== "pending" ? s : undefined;
    });
    t.equal(status.state, "success");
    t.same(forkRequests, [], "the fork's URL was never contacted");
    t.equal(calls.length, 0, "no dry-run for a fork");
    const body = [...f.github.comments.values()][0]?.body ?? "";
    t.match(body, FORK_DRY_RUN_NOTE);
    t.match(body, /\| train \| trainer \| beijing \|/, "the plan itself is still made");
    t.same(f.github.violations, []);
  },
);

t.test("a workload the target cluster's API server refuses fails the plan", async (t) => {
  const { runner, calls } = recordingRunner(() => ({
    state: "failed",
    message: 'admission webhook "gpu-quota.example" denied the request: team quota exceeded',
  }));
  const f = await setupFixture(t, { dryRunner: runner, workloadNamespace: "rlark-work" });
  const sha = await f.pushPull(2, { "jobs/train.yaml": gpuJob("train", 1) });
  await f.deliver(pullRequestPayload("opened", sha));
  const status = await settle("dry-run review", () => {
    const s = f.github.status(sha, PLAN_CONTEXT);
    return s && s.state !== "pending" ? s : undefined;
  });
  t.equal(status.state, "failure");
  t.match(status.description, /dry-run failed for 1 workload/);
  t.equal(calls.length, 1);
  t.equal(calls[0]?.cluster, "beijing");
  t.equal(calls[0]?.workload.kind, "Deployment");
  t.equal(calls[0]?.workload.metadata.namespace, "rlark-work");
  t.equal(calls[0]?.workload.metadata.name, "train-trainer");
  const body = [...f.github.comments.values()][0]?.body ?? "";
  t.match(body, /\| beijing \| `Deployment\/rlark-work\/train-trainer` \| ❌ admission webhook/);
});

t.test("a cluster whose agent is away is reported as not dry-run, without failing the plan", async (t) => {
  const { runner } = recordingRunner(() => ({ state: "offline" }));
  const f = await setupFixture(t, { dryRunner: runner });
  const sha = await f.pushPull(2, { "jobs/train.yaml": gpuJob("train", 1) });
  await f.deliver(pullRequestPayload("opened", sha));
  const status = await settle("offline review", () => {
    const s = f.github.status(sha, PLAN_CONTEXT);
    return s && s.state !== "pending" ? s : undefined;
  });
  t.equal(status.state, "success");
  const body = [...f.github.comments.values()][0]?.body ?? "";
  t.match(body, /cluster offline, not dry-run/);
  t.match(body, /1 cluster offline, not dry-run/);
});

// Were the link followed, "does not exist" for one target and "symlink out" for another would tell
// a pull request's author which paths exist on the hub; and what /etc holds would be in a public comment.
for (const [target, title] of [
  [
    "/etc",
    "a manifests folder that a pull request turns into a symlink out of the repository is refused, unread",
  ],
  [
    "/nonexistent-rlark-probe",
    "a manifests folder linked to a path outside the repository is refused without looking whether it exists there",
  ],
] as const) {
  t.test(title, async (t) => {
    const f = await setupFixture(t, { path: "manifests" });
    const { symlink } = await import("node:fs/promises");
    const { join } = await import("node:path");
    const sha = await f.pushPull(2, {}, `point manifests at ${target}`, async (work) => {
      await rm(join(work, "manifests"), { recursive: true, force: true });
      await symlink(target, join(work, "manifests"));
    });
    await f.deliver(pullRequestPayload("synchronize", sha));
    const status = await settle("review", () => {
      const s = f.github.status(sha, PLAN_CONTEXT);
      return s && s.state !== "pending" ? s : undefined;
    });
    t.equal(status.state, "failure");
    const body = [...f.github.comments.values()][0]?.body ?? "";
    t.match(body, /manifests at revision [0-9a-f]{40} is a symlink out of the repository/);
    t.notMatch(body, /passwd|hostname/, "nothing under the link was read");
  });
}

t.test("the reviewer refuses an unsigned pull_request before reading its body", async (t) => {
  const f = await setupFixture(t);
  const { port } = new URL(f.hookUrl);
  const socket = connect(Number(port), "127.0.0.1");
  t.teardown(() => socket.destroy());
  let answer = "";
  socket.on("data", (chunk: Buffer) => {
    answer += chunk.toString();
  });
  // A large body announced and never sent: only the headers can be answered.
  socket.write(
    "POST /hooks/git HTTP/1.1\r\nHost: hub\r\nX-GitHub-Event: pull_request\r\nContent-Length: 10000000\r\n\r\n",
  );
  await waitFor("an answer without the body", () => answer.includes("\r\n\r\n"));
  t.match(answer, /^HTTP\/1\.1 401/);
  t.match(answer, /missing X-Hub-Signature-256/);
  t.equal(f.github.requests.length, 0);
});
