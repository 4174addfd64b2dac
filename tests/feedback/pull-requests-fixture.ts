// Shared setup for the pull-request tests: a real git server holding the PR refs, a real store
// with Cluster and Node reports, the GitHub stand-in, and webhook requests built from the real
// pull_request payloads of @octokit/webhooks-examples, signed with sign().
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type RequestListener } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import type { Test } from "tap";
import { liveFromStore } from "../../operators/feedback/plan/index.ts";
import { createGitHubProvider } from "../../operators/feedback/providers/index.ts";
import {
  createPullRequestReviewer,
  type PullRequestReviewerOptions,
} from "../../operators/feedback/pull-requests.ts";
import { openSqliteStore, type Store } from "../../operators/lib/store/index.ts";
import { createGitRepository } from "../../operators/source/index.ts";
import { createGitServer, type GitServer, runGit } from "../helpers/git-server.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { type GitHubStandIn, startGitHubStandIn } from "./providers/github-stand-in.ts";

const require = createRequire(import.meta.url);
export const OWNER = "Codertocat";
export const REPO = "Hello-World";
export const SECRET = "it's a secret to everybody";
export const TOKEN = "ghs_testtoken0123456789abcdef";
/** The examples' pull request targets `master`, so the tracked branch is `master` here. */
export const BRANCH = "master";

type Payload = Record<string, unknown> & {
  number: number;
  pull_request: Record<string, unknown> & {
    head: Record<string, unknown> & { repo: Record<string, unknown> };
  };
};

/** A real pull_request payload from @octokit/webhooks-examples, with the head moved to `sha`. */
export function pullRequestPayload(action: "opened" | "synchronize" | "reopened", sha: string): Payload {
  const all = require("@octokit/webhooks-examples/api.github.com/index.json") as {
    name: string;
    examples: (Record<string, unknown> & { action: string })[];
  }[];
  const example = all.find((e) => e.name === "pull_request")?.examples.find((e) => e.action === action);
  if (!example) throw new Error(`no pull_request ${action} example`);
  const payload = structuredClone(example) as unknown as Payload;
  payload.pull_request.head.sha = sha;
  return payload;
}

export const CLUSTER = `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: beijing
  labels:
    region: cn-north
spec:
  runtime: kubernetes
`;

export const DOMAIN = `apiVersion: rlinf.io/v1alpha1
kind: Domain
metadata:
  name: lab
spec:
  cidr: 10.0.1.0/29
`;

export function gpuJob(name: string, gpus: number, replicas = 1): string {
  return `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: ${name}
spec:
  domain: lab
  tasks:
    - name: trainer
      head: true
      role: Actor
      agentType: Kubernetes
      kubernetes:
        workload:
          kind: Deployment
          replicas: ${replicas}
          template:
            spec:
              containers:
                - name: trainer
                  image: pytorch/pytorch:2.3.0
                  resources:
                    requests:
                      cpu: "2"
                      nvidia.com/gpu: "${gpus}"
                    limits:
                      nvidia.com/gpu: "${gpus}"
`;
}

export interface Fixture {
  git: GitServer;
  store: Store;
  github: GitHubStandIn;
  /** Commits `files` on top of the tracked branch and pushes them as `refs/pull/<n>/head`; returns the sha. */
  pushPull(
    n: number,
    files: Record<string, string | null>,
    message?: string,
    edit?: (work: string) => Promise<void>,
  ): Promise<string>;
  /** POSTs a signed webhook to the reviewer's handler; returns status and message. */
  deliver(
    payload: unknown,
    options?: { event?: string; delivery?: string; secret?: string },
  ): Promise<{ status: number; message: string }>;
  reviewer: ReturnType<typeof createPullRequestReviewer>;
  /** Where the reviewer's handler listens. */
  hookUrl: string;
}

export async function setupFixture(
  t: Test,
  overrides: Partial<PullRequestReviewerOptions> = {},
): Promise<Fixture> {
  const git = await createGitServer({ branch: BRANCH });
  await git.startDaemon();
  const dataDir = await mkdtemp(join(tmpdir(), "rlark-pr-"));
  const github = await startGitHubStandIn({ owner: OWNER, repo: REPO });
  const store = openSqliteStore({ dataDir: join(dataDir, "store") });
  t.teardown(async () => {
    await github.close();
    await store.close();
    await git.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  // The tracked branch, as the hub has applied it: a Cluster reporting one Node with 8 GPUs.
  await git.commit({ "clusters/beijing.yaml": CLUSTER, "domains/lab.yaml": DOMAIN }, "base");
  await store.create({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Cluster",
    metadata: { name: "beijing", labels: { region: "cn-north", "rlark.io/managed-by": "git" } },
    spec: { runtime: "kubernetes" },
    status: { phase: "Online" },
  });
  await store.create({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Domain",
    metadata: { name: "lab", labels: { "rlark.io/managed-by": "git" } },
    spec: { cidr: "10.0.1.0/29" },
  });
  await store.create({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Node",
    metadata: { name: "gpu-node-01", namespace: "agent-beijing", labels: { "nvidia.com/gpu": "true" } },
    status: {
      phase: "Online",
      allocatable: { cpu: "32", memory: "256Gi", "nvidia.com/gpu": "8", pods: "110" },
      conditions: [{ type: "Ready", status: "True" }],
    },
  });

  const repository = createGitRepository({ url: git.daemonUrl, branch: BRANCH, dataDir });
  const provider = createGitHubProvider({ baseUrl: github.url, auth: { token: TOKEN }, retryBaseMs: 5 });
  const reviewer = createPullRequestReviewer({
    provider,
    repo: { owner: OWNER, repo: REPO },
    repository,
    live: () => liveFromStore(store),
    secrets: () => [SECRET],
    dashboardUrl: "https://rlark.example.test/",
    retryBaseMs: 5,
    ...overrides,
  });
  t.teardown(() => reviewer.stop());

  const listener: RequestListener = reviewer.httpHandler;
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  const hookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/git`;
  let deliveries = 0;

  return {
    git,
    store,
    github,
    reviewer,
    hookUrl,
    async pushPull(n, files, message = `pull request ${n}`, edit) {
      await runGit(git.work, ["checkout", "--quiet", "-B", `pr-${n}`, `origin/${BRANCH}`]).catch(async () => {
        await runGit(git.work, ["fetch", "--quiet", "origin"]);
        await runGit(git.work, ["checkout", "--quiet", "-B", `pr-${n}`, `origin/${BRANCH}`]);
      });
      // Keep earlier commits of this pull request: a second push builds on the first.
      const existing = await runGit(git.bare, [
        "rev-parse",
        "--verify",
        "--quiet",
        `refs/pull/${n}/head`,
      ]).catch(() => "");
      if (existing.trim()) {
        await runGit(git.work, ["fetch", "--quiet", "origin", `refs/pull/${n}/head`]);
        await runGit(git.work, ["reset", "--quiet", "--hard", "FETCH_HEAD"]);
      }
      const { mkdir, writeFile } = await import("node:fs/promises");
      const { dirname } = await import("node:path");
      for (const [path, content] of Object.entries(files)) {
        const full = join(git.work, path);
        if (content === null) await rm(full, { force: true });
        else {
          await mkdir(dirname(full), { recursive: true });
          await writeFile(full, content);
        }
      }
      await edit?.(git.work);
      await runGit(git.work, ["add", "--all"]);
      await runGit(git.work, ["commit", "--quiet", "--allow-empty", "-m", message]);
      await runGit(git.work, ["push", "--quiet", "--force", "origin", `HEAD:refs/pull/${n}/head`]);
      const sha = (await runGit(git.work, ["rev-parse", "HEAD"])).trim();
      await runGit(git.work, ["checkout", "--quiet", BRANCH]);
      return sha;
    },
    async deliver(payload, options = {}) {
      const body = JSON.stringify(payload);
      const signature = await sign(options.secret ?? SECRET, body);
      const response = await fetch(hookUrl, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": options.event ?? "pull_request",
          "x-github-delivery": options.delivery ?? `delivery-${++deliveries}`,
          "x-hub-signature-256": signature,
        },
        body,
      });
      const text = await response.text();
      return {
        status: response.status,
        message: text ? (JSON.parse(text) as { message: string }).message : "",
      };
    },
  };
}

/**
 * Bounded polling sized for a review: GitHub's write spacing (one write a second, which the
 * throttling plugin keeps) makes one review take seconds, more on a loaded CI machine.
 */
export function settle<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>) {
  return waitFor(what, check, { attempts: 12_000, everyMs: 10 });
}
