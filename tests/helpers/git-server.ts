// A real git server for tests: a bare repository in a temp dir, a working clone that pushes to it,
// and (on demand) a `git daemon` on a free port of 127.0.0.1 serving the same repository.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { freePort } from "./free-port.ts";
import { hasExited, stopChild } from "./stop-child.ts";
import { onRealServers, waitFor } from "./wait-for.ts";

export interface GitServer {
  /** Temp dir holding everything; removed by close(). */
  readonly root: string;
  /** The bare repository. */
  readonly bare: string;
  /** A working clone whose `origin` is the bare repository. */
  readonly work: string;
  readonly branch: string;
  /** file:// URL of the bare repository. */
  readonly fileUrl: string;
  /** git:// URL served by the daemon (start it first). */
  readonly daemonUrl: string;
  /** Writes (string) or deletes (null) files in the working clone, commits and pushes; returns the sha. */
  commit(files: Record<string, string | null>, message?: string): Promise<string>;
  /** Runs git in the working clone and returns stdout. */
  git(...args: string[]): Promise<string>;
  /** Runs git in the bare repository and returns stdout. */
  gitBare(...args: string[]): Promise<string>;
  /** Starts `git daemon` (on the same port as before when restarted). */
  startDaemon(): Promise<void>;
  stopDaemon(): Promise<void>;
  close(): Promise<void>;
}

/** Environment that isolates test git from the machine's global and system config. */
export const testGitEnv: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_TERMINAL_PROMPT: "0",
  GIT_AUTHOR_NAME: "Test Author",
  GIT_AUTHOR_EMAIL: "author@example.test",
  GIT_COMMITTER_NAME: "Test Author",
  GIT_COMMITTER_EMAIL: "author@example.test",
};

export function runGit(cwd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile("git", args, { cwd, env: testGitEnv, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`git ${args.join(" ")} in ${cwd}: ${stderr || error.message}`));
      else resolve(stdout);
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

export async function createGitServer(options: { branch?: string; name?: string } = {}): Promise<GitServer> {
  const branch = options.branch ?? "main";
  const name = options.name ?? "manifests.git";
  const root = await mkdtemp(join(tmpdir(), "rlark-git-"));
  const bare = join(root, "srv", name);
  const work = join(root, "work");
  await mkdir(bare, { recursive: true });
  await runGit(bare, ["init", "--bare", "--quiet", `--initial-branch=${branch}`]);
  await runGit(root, ["init", "--quiet", `--initial-branch=${branch}`, work]);
  await runGit(work, ["remote", "add", "origin", bare]);
  let port = 0;
  let daemon: ChildProcess | undefined;

  const server: GitServer = {
    root,
    bare,
    work,
    branch,
    fileUrl: pathToFileURL(bare).toString(),
    get daemonUrl() {
      if (!port) throw new Error("start the daemon first");
      return `git://127.0.0.1:${port}/${name}`;
    },
    async commit(files, message = "change") {
      for (const [path, content] of Object.entries(files)) {
        const full = join(work, path);
        if (content === null) {
          await rm(full, { force: true });
        } else {
          await mkdir(dirname(full), { recursive: true });
          await writeFile(full, content);
        }
      }
      await runGit(work, ["add", "--all"]);
      await runGit(work, ["commit", "--quiet", "--allow-empty", "-m", message]);
      await runGit(work, ["push", "--quiet", "--force", "origin", `HEAD:refs/heads/${branch}`]);
      return (await runGit(work, ["rev-parse", "HEAD"])).trim();
    },
    git: (...args) => runGit(work, args),
    gitBare: (...args) => runGit(bare, args),
    async startDaemon() {
      if (daemon && !hasExited(daemon)) return;
      port ||= await freePort();
      const child = spawn(
        "git",
        [
          "daemon",
          "--reuseaddr",
          "--export-all",
          "--informative-errors",
          "--enable=receive-pack",
          "--listen=127.0.0.1",
          `--port=${port}`,
          `--base-path=${join(root, "srv")}`,
          join(root, "srv"),
        ],
        { env: testGitEnv, stdio: "ignore" },
      );
      daemon = child;
      await waitFor(
        `git daemon on port ${port}`,
        () => child.exitCode !== null || canConnect(port),
        onRealServers,
      );
      if (child.exitCode !== null) {
        // not recorded as running: the next start tries again (the port may still be held)
        daemon = undefined;
        throw new Error(`git daemon exited with ${child.exitCode}`);
      }
    },
    async stopDaemon() {
      const child = daemon;
      daemon = undefined;
      // A daemon killed by a signal (the soak's kill -9) has exited with no exit code.
      if (child) await stopChild(child, { label: "git daemon" });
      await waitFor(
        `git daemon on port ${port} to stop`,
        async () => !(await canConnect(port)),
        onRealServers,
      );
    },
    async close() {
      await server.stopDaemon();
      await rm(root, { recursive: true, force: true });
    },
  };
  return server;
}
