// Pull-request review: on every new head of a pull request into the tracked branch, fetch the
// head from the base repository, validate it, plan it against the live state, and answer on the
// pull request: one comment edited in place, a `rlark/plan` commit status on the head, and
// inline findings at file and line.
//
// Security: the head is fetched from the base repository's `refs/pull/N/head` (never from a
// fork's URL), checked out with git plumbing only, and read as data: nothing in it runs, and for
// a fork's pull request nothing is sent to a cluster (no dry-run).

import { existsSync } from "node:fs";
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { join } from "node:path";
import type { SealCheck } from "../api/index.ts";
import { type Clock, systemClock, type TimerId } from "../lib/clock.ts";
import { type Logger, silentLogger } from "../lib/logger.ts";
import type { KubeObject } from "../lib/store/index.ts";
import {
  checkManifestDir,
  createWebhookIntake,
  type GitRepository,
  gitIn,
  gitRemote,
  replyWebhook,
  type WebhookIntake,
} from "../source/index.ts";
import { diffLines, inDiff } from "./diff-lines.ts";
import {
  checkoutRevision,
  computePlan,
  type Plan,
  planFailed,
  planTree,
  planVerdict,
  renderPlanMarkdown,
  type WorkloadDryRunner,
} from "./plan/index.ts";
import { planMarker, upsertPlanComment } from "./plan-comment.ts";
import type { FeedbackProvider, InlineFinding, PullRequestRef, RepoRef } from "./providers/index.ts";
import {
  type PullRequestEvent,
  parsePullRequestWebhook,
  type WebhookRequest,
} from "./pull-request-webhook.ts";

export const PLAN_CONTEXT = "rlark/plan";
export const FORK_DRY_RUN_NOTE = "not dry-run: the pull request comes from a fork";

export interface PullRequestReviewerOptions {
  provider: FeedbackProvider;
  /** owner/repo on the code host. */
  repo: RepoRef;
  /** The hub's mirror of the repository (credentials, bare clone). */
  repository: Pick<GitRepository, "dir" | "auth" | "fetch" | "redact" | "branch" | "timeoutMs">;
  /** The manifests' folder inside the repository. */
  path?: string;
  /** The live state the plan is measured against (e.g. `() => liveFromStore(store)`). */
  live: () => Promise<KubeObject[]>;
  /** Webhook secrets, read per request so a rotated file takes effect at once. */
  secrets?: () => readonly string[] | Promise<readonly string[]>;
  /** Body limits, budget and remembered deliveries; the hub shares one with the push handler. */
  intake?: WebhookIntake;
  /** Names the hub in the status context and comment marker when several hubs watch one repository. */
  hubName?: string;
  dashboardUrl?: string;
  dryRunner?: WorkloadDryRunner;
  workloadNamespace?: string;
  /** PlanTreeOptions.sealCheck. */
  sealCheck?: SealCheck;
  /** Poll open pull requests this often (a fallback when no webhook is configured); 0 disables. */
  pollIntervalMs?: number;
  /** First retry delay of a review that failed (host or git down); doubles up to 5 minutes. */
  retryBaseMs?: number;
  clock?: Clock;
  logger?: Logger;
}

export interface ReviewOutcome {
  number: number;
  sha: string;
  failed: boolean;
  commentId: number;
  commentCreated: boolean;
  findings: number;
  plan: Plan;
}

export interface PullRequestReviewer {
  /** Verifies and routes one webhook request; the review itself runs after the answer. */
  handleWebhook(request: WebhookRequest): Promise<{ status: number; message: string }>;
  /** `POST /hooks/git` for pull_request events, as a node:http handler. */
  readonly httpHandler: RequestListener;
  /** Reviews a pull request now (queued behind a review of the same pull request in progress). */
  review(pull: PullRequestRef, htmlUrl?: string): Promise<ReviewOutcome | undefined>;
  /** Lists open pull requests and reviews each whose head has not been reviewed yet. */
  poll(): Promise<void>;
  start(): void;
  stop(): Promise<void>;
  /** Resolves when no review is queued or running. */
  idle(): Promise<void>;
  on(listener: (outcome: ReviewOutcome) => void): void;
}

const MAX_RETRY_MS = 300_000;

export function createPullRequestReviewer(options: PullRequestReviewerOptions): PullRequestReviewer {
  return new Reviewer(options);
}

interface Pending {
  pull: PullRequestRef;
  htmlUrl: string;
  attempt: number;
}

class Reviewer implements PullRequestReviewer {
  #o: PullRequestReviewerOptions;
  #log: Logger;
  #clock: Clock;
  #marker: string;
  #context: string;
  #intake: WebhookIntake;
  /** Last head reviewed (and answered) per pull request. */
  #reviewed = new Map<number, string>();
  /** Next head to review per pull request; one review per pull request runs at a time. */
  #pending = new Map<number, Pending>();
  #running = new Map<number, Promise<void>>();
  #retries = new Map<number, TimerId>();
  #pollTimer: TimerId | undefined;
  #stopped = false;
  #listeners: ((outcome: ReviewOutcome) => void)[] = [];
  readonly httpHandler: RequestListener;

  constructor(options: PullRequestReviewerOptions) {
    this.#o = options;
    this.#log = options.logger ?? silentLogger;
    this.#clock = options.clock ?? systemClock;
    this.#intake = options.intake ?? createWebhookIntake();
    this.#marker = planMarker(options.hubName);
    this.#context = options.hubName ? `${PLAN_CONTEXT} (${options.hubName})` : PLAN_CONTEXT;
    this.httpHandler = (req, res) => this.#serve(req, res);
  }

  on(listener: (outcome: ReviewOutcome) => void): void {
    this.#listeners.push(listener);
  }

  async handleWebhook(request: WebhookRequest): Promise<{ status: number; message: string }> {
    return this.#decide(request, this.#o.secrets ? await this.#o.secrets() : []);
  }

  #decide(request: WebhookRequest, secrets: readonly string[]): { status: number; message: string } {
    const verdict = parsePullRequestWebhook(request, {
      secrets,
      repo: this.#o.repo,
      branch: this.#o.repository.branch,
    });
    if (verdict.status !== 202 || !("event" in verdict) || !verdict.event) return verdict;
    const event: PullRequestEvent = verdict.event;
    // A replay of a delivery (verified, so a forged one cannot spoil the id) does nothing.
    if (event.delivery && !this.#intake.firstDelivery(event.delivery))
      return { status: 200, message: `duplicate delivery ${event.delivery}: nothing done` };
    this.#enqueue(
      {
        number: event.number,
        headSha: event.headSha,
        headRef: event.headRef,
        baseRef: event.baseRef,
        fork: event.fork,
      },
      event.htmlUrl,
    );
    return { status: 202, message: verdict.message };
  }

  review(pull: PullRequestRef, htmlUrl = ""): Promise<ReviewOutcome | undefined> {
    return new Promise((resolve) => {
      let done = false;
      const listener = (outcome: ReviewOutcome) => {
        if (done || outcome.number !== pull.number || outcome.sha !== pull.headSha) return;
        done = true;
        resolve(outcome);
      };
      this.#listeners.push(listener);
      this.#reviewed.delete(pull.number);
      this.#enqueue(pull, htmlUrl);
      void this.idle().then(() => {
        this.#listeners = this.#listeners.filter((l) => l !== listener);
        if (!done) resolve(undefined);
      });
    });
  }

  async poll(): Promise<void> {
    const pulls = await this.#o.provider.listOpenPullRequests(this.#o.repo);
    const branch = this.#o.repository.branch;
    for (const pull of pulls) {
      if (pull.baseRef !== branch) continue;
      if (this.#reviewed.get(pull.number) === pull.headSha) continue;
      this.#enqueue(pull, "");
    }
  }

  start(): void {
    const every = this.#o.pollIntervalMs ?? 0;
    if (every <= 0 || this.#stopped) return;
    const tick = () => {
      this.#pollTimer = undefined;
      this.poll()
        .catch((error: unknown) =>
          this.#log.warn("pull request poll failed", { error: this.#message(error) }),
        )
        .finally(() => {
          if (!this.#stopped) this.#pollTimer = this.#clock.setTimeout(tick, every);
        });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#pollTimer) this.#clock.clearTimeout(this.#pollTimer);
    for (const timer of this.#retries.values()) this.#clock.clearTimeout(timer);
    this.#retries.clear();
    this.#pending.clear();
    await Promise.all(this.#running.values());
  }

  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.all(this.#running.values());
  }

  #enqueue(pull: PullRequestRef, htmlUrl: string, attempt = 0): void {
    if (this.#stopped) return;
    const queued = this.#pending.get(pull.number);
    // A duplicate of what is queued or already answered changes nothing.
    if (queued?.pull.headSha === pull.headSha) return;
    if (this.#reviewed.get(pull.number) === pull.headSha && !this.#running.has(pull.number)) return;
    const retry = this.#retries.get(pull.number);
    if (retry) {
      this.#clock.clearTimeout(retry);
      this.#retries.delete(pull.number);
    }
    this.#pending.set(pull.number, { pull, htmlUrl: htmlUrl || queued?.htmlUrl || "", attempt });
    if (!this.#running.has(pull.number)) this.#run(pull.number);
  }

  #run(number: number): void {
    const loop = (async () => {
      for (;;) {
        const next = this.#pending.get(number);
        if (!next || this.#stopped) break;
        this.#pending.delete(number);
        if (this.#reviewed.get(number) === next.pull.headSha) continue;
        try {
          const outcome = await this.#review(next);
          this.#reviewed.set(number, outcome.sha);
          for (const listener of [...this.#listeners]) listener(outcome);
        } catch (error) {
          this.#scheduleRetry(next, error);
        }
      }
    })();
    this.#running.set(number, loop);
    void loop.finally(() => this.#running.delete(number));
  }

  #scheduleRetry(pending: Pending, error: unknown): void {
    if (this.#stopped || this.#pending.has(pending.pull.number)) return;
    const delay = Math.min((this.#o.retryBaseMs ?? 5_000) * 2 ** pending.attempt, MAX_RETRY_MS);
    this.#log.warn("pull request review failed; retrying", {
      pull: pending.pull.number,
      sha: pending.pull.headSha,
      retryInMs: delay,
      error: this.#message(error),
    });
    const timer = this.#clock.setTimeout(() => {
      this.#retries.delete(pending.pull.number);
      this.#enqueue(pending.pull, pending.htmlUrl, pending.attempt + 1);
    }, delay);
    this.#retries.set(pending.pull.number, timer);
  }

  #message(error: unknown): string {
    return this.#o.repository.redact(error instanceof Error ? error.message : String(error));
  }

  async #fetchHead(pull: PullRequestRef): Promise<{ head: string; base: string }> {
    const repository = this.#o.repository;
    // The watcher creates the mirror; before its first fetch we make it ourselves.
    if (!existsSync(join(repository.dir, "HEAD"))) await repository.fetch();
    const auth = await repository.auth();
    const git = gitIn(repository.dir, { env: auth.env });
    const headRef = `refs/rlark/pull/${pull.number}/head`;
    const baseRef = `refs/rlark/pull/${pull.number}/base`;
    try {
      // Always the base repository's URL: a fork's head is mirrored there by the host.
      await gitRemote(
        repository.dir,
        [
          "fetch",
          "--no-tags",
          "--no-write-fetch-head",
          "--quiet",
          "--progress",
          auth.remoteUrl,
          `+refs/pull/${pull.number}/head:${headRef}`,
          `+refs/heads/${repository.branch}:${baseRef}`,
        ],
        { env: auth.env, timeoutMs: repository.timeoutMs },
      );
    } catch (error) {
      throw new Error(`git fetch of pull request #${pull.number}: ${this.#message(error).trim()}`);
    }
    const head = (await git.raw(["rev-parse", "--verify", `${headRef}^{commit}`])).trim();
    const base = (await git.raw(["rev-parse", "--verify", `${baseRef}^{commit}`])).trim();
    return { head, base };
  }

  async #review(pending: Pending): Promise<ReviewOutcome> {
    const { pull } = pending;
    const { provider, repo } = this.#o;
    const fetched = await this.#fetchHead(pull);
    // The pull request may have moved on since the event (or a force-push dropped its head):
    // what the host holds now is what gets reviewed, and answered on.
    const sha = fetched.head;
    if (sha !== pull.headSha) {
      this.#log.info("pull request head moved", { pull: pull.number, event: pull.headSha, fetched: sha });
      this.#reviewed.set(pull.number, pull.headSha);
    }
    await provider.setCommitStatus(repo, sha, {
      context: this.#context,
      state: "pending",
      description: "planning against the live state…",
      ...(this.#o.dashboardUrl ? { targetUrl: this.#o.dashboardUrl } : {}),
    });
    const tree = await checkoutRevision(this.#o.repository.dir, sha);
    let plan: Plan;
    try {
      const unreadable = await checkManifestDir(tree.dir, this.#o.path ?? ".", sha);
      plan = unreadable
        ? computePlan({
            validation: { valid: false, documents: 0, errors: [unreadable], warnings: [], objects: [] },
            live: [],
            revision: sha,
            against: "nothing: the manifests could not be read",
          })
        : await planTree({
            dir: tree.dir,
            paths: [this.#o.path ?? "."],
            revision: sha,
            live: await this.#o.live(),
            against: this.#o.hubName ? `the live state of hub ${this.#o.hubName}` : "the hub's live state",
            ...(pull.fork || !this.#o.dryRunner ? {} : { dryRunner: this.#o.dryRunner }),
            ...(this.#o.workloadNamespace ? { workloadNamespace: this.#o.workloadNamespace } : {}),
            ...(this.#o.sealCheck ? { sealCheck: this.#o.sealCheck } : {}),
          });
      if (pull.fork && plan.valid) plan.dryRunNote = FORK_DRY_RUN_NOTE;
    } finally {
      await tree.remove();
    }

    const htmlUrl = pending.htmlUrl.replace(/\/+$/, "");
    const markdown = renderPlanMarkdown(plan, {
      ...(htmlUrl
        ? { fileUrl: (file, line) => `${htmlUrl}/blob/${sha}/${file}${line > 0 ? `#L${line}` : ""}` }
        : {}),
    });
    const comment = await upsertPlanComment(provider, repo, pull.number, this.#marker, markdown);

    const findings = await this.#findings(plan, fetched.base, sha);
    if (findings.length > 0 || provider.checkRuns) {
      await provider
        .publishFindings(repo, pull.number, sha, {
          name: this.#context,
          summary: `RLark plan: ${planVerdict(plan)}`,
          findings,
          conclusion: planFailed(plan) ? "failure" : "success",
        })
        .catch((error: unknown) => {
          // Inline comments are a convenience; the plan comment already lists every error.
          this.#log.warn("inline findings not published", { pull: pull.number, error: this.#message(error) });
        });
    }

    const failed = planFailed(plan);
    await provider.setCommitStatus(repo, sha, {
      context: this.#context,
      state: failed ? "failure" : "success",
      description: planVerdict(plan),
      ...(this.#o.dashboardUrl ? { targetUrl: this.#o.dashboardUrl } : {}),
    });
    this.#log.info("pull request reviewed", { pull: pull.number, sha, failed, comment: comment.id });
    return {
      number: pull.number,
      sha,
      failed,
      commentId: comment.id,
      commentCreated: comment.created,
      findings: findings.length,
      plan,
    };
  }

  /** Errors and warnings at lines the diff shows (the only lines a review comment can address). */
  async #findings(plan: Plan, base: string, head: string): Promise<InlineFinding[]> {
    const located = [
      ...plan.errors.map((d) => ({ d, level: "failure" as const })),
      ...plan.warnings.map((d) => ({ d, level: "warning" as const })),
    ].filter(({ d }) => d.line > 0);
    if (located.length === 0) return [];
    let lines: Awaited<ReturnType<typeof diffLines>>;
    try {
      lines = await diffLines(this.#o.repository.dir, base, head);
    } catch (error) {
      this.#log.warn("pull request diff unreadable; no inline findings", { error: this.#message(error) });
      return [];
    }
    const findings: InlineFinding[] = [];
    for (const { d, level } of located) {
      if (!inDiff(lines, d.file, d.line) && !this.#o.provider.checkRuns) continue;
      const object = d.kind ? `${d.kind}${d.name ? ` ${d.name}` : ""}` : "";
      findings.push({
        path: d.file,
        line: d.line,
        level,
        title: [object, d.path].filter(Boolean).join(" ") || d.rule,
        message: `${d.message} [${d.rule}]`,
      });
    }
    return findings;
  }

  #serve(req: IncomingMessage, res: ServerResponse): void {
    const serve = async () => {
      const received = await this.#intake.receive(req, res, this.#o.secrets ?? (() => []));
      if (!received) return;
      const result = this.#decide({ headers: req.headers, body: received.body }, received.secrets);
      this.#log.info("pull request webhook", { status: result.status, message: result.message });
      replyWebhook(res, result.status, result.message);
    };
    serve().catch((error: unknown) => {
      this.#log.warn("pull request webhook failed", { error: this.#message(error) });
      if (!res.headersSent) replyWebhook(res, 500, "internal error");
    });
  }
}
