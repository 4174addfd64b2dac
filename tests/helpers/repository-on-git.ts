// The source's repository client on a git server of the test's own: what the watcher, the status
// branch writer and the feedback tests read and push through. Both are removed at teardown.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Test } from "tap";
import { createGitRepository, type GitRepository } from "../../operators/source/index.ts";
import { createGitServer, type GitServer } from "./git-server.ts";

export interface RepositoryOnGit {
  server: GitServer;
  /** The client's data dir (its clone lives under it). */
  dataDir: string;
  repository: GitRepository;
}

/** With `daemon`, the client reaches the server over git:// rather than file://. */
export async function repositoryOnGit(t: Test, options: { daemon?: boolean } = {}): Promise<RepositoryOnGit> {
  const server = await createGitServer();
  if (options.daemon) await server.startDaemon();
  const dataDir = await mkdtemp(join(tmpdir(), "rlark-data-"));
  t.teardown(async () => {
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  const repository = createGitRepository({
    url: options.daemon ? server.daemonUrl : server.fileUrl,
    branch: server.branch,
    dataDir,
  });
  return { server, dataDir, repository };
}
