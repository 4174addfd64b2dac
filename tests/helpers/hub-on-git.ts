// A real hub on a real git server: the set-up the hub, CLI and end-to-end tests share. The hub
// listens on free ports of 127.0.0.1, keeps its data in a temp dir and is stopped at teardown,
// before the git server it watches is removed.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Test } from "tap";
import { type Hub, type HubOptions, startHub } from "../../operators/hub/hub.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { createGitServer, type GitServer } from "./git-server.ts";
import { relayEngineOptions } from "./relay-engine.ts";

export interface HubOnGit {
  /** The running hub; restart() replaces it. */
  hub: Hub;
  git: GitServer;
  dataDir: string;
  /** The commit of `files`, when the options had some. */
  revision: string | undefined;
  /** Stops the hub and starts it again on the same data dir, with `changes` to its options. */
  restart(changes?: Partial<HubOptions>): Promise<Hub>;
}

export interface HubOnGitOptions extends Partial<HubOptions> {
  /** Committed before the hub starts. */
  files?: Record<string, string>;
  /** A git server of the caller's, who closes it; without it one of the test's own. */
  git?: GitServer;
}

/** A hub's options for watching `git`, with `changes` (undefined values leave a default). */
export function hubOptions(git: GitServer, dataDir: string, ...changes: Partial<HubOptions>[]): HubOptions {
  const options: HubOptions = {
    dataDir,
    http: "127.0.0.1:0",
    ssh: "127.0.0.1:0",
    repo: git.fileUrl,
    branch: git.branch,
    intervalMs: 200,
    logger: silentLogger,
  };
  for (const change of changes) {
    for (const [key, value] of Object.entries(change)) {
      if (value !== undefined) Object.assign(options, { [key]: value });
    }
  }
  // A hub with a Domain relay runs the engine the test run asks for (the Go one, built for it).
  if (options.domainRelay && !options.domainRelayEngine) Object.assign(options, relayEngineOptions());
  return options;
}

export async function startHubOnGit(t: Test, options: HubOnGitOptions = {}): Promise<HubOnGit> {
  const { files, git: given, ...changes } = options;
  const git = given ?? (await createGitServer());
  if (!given) t.teardown(() => git.close());
  const revision = files ? await git.commit(files) : undefined;
  const dataDir = changes.dataDir ?? (await mkdtemp(path.join(tmpdir(), "rlark-hub-")));
  const running: HubOnGit = {
    hub: await startHub(hubOptions(git, dataDir, changes)),
    git,
    dataDir,
    revision,
    async restart(more = {}) {
      await running.hub.stop();
      running.hub = await startHub(hubOptions(git, dataDir, changes, more));
      return running.hub;
    },
  };
  t.teardown(() => running.hub.stop());
  return running;
}
