import { type SimpleGit, simpleGit } from "simple-git";

/** The environment variables our git processes may carry; simple-git strips every other GIT_*. */
const ALLOWED_ENV = [
  "GIT_TERMINAL_PROMPT",
  "GIT_SSH_COMMAND",
  "GIT_CONFIG_COUNT",
  "GIT_CONFIG_KEY_0",
  "GIT_CONFIG_VALUE_0",
  "GIT_INDEX_FILE",
  "GIT_WORK_TREE",
  "GIT_AUTHOR_NAME",
  "GIT_AUTHOR_EMAIL",
  "GIT_AUTHOR_DATE",
  "GIT_COMMITTER_NAME",
  "GIT_COMMITTER_EMAIL",
  "GIT_COMMITTER_DATE",
];

export interface GitExecOptions {
  /** Extra environment (credentials, index file, identities) on top of the process's own. */
  env?: Readonly<Record<string, string>>;
  /** Bytes written to git's stdin, for plumbing such as `update-index --index-info`. */
  input?: string | Buffer;
  /** Kill git when it has been silent this long (a blackholed server must not hang the loop); default 10 min, as fetches run with --quiet. */
  timeoutMs?: number;
}

/** A simple-git instance for one directory, allowed exactly the environment our credentials need. */
export function gitIn(baseDir: string, options: GitExecOptions = {}): SimpleGit {
  const input = options.input;
  const git = simpleGit({
    baseDir,
    allowEnvironment: ALLOWED_ENV,
    unsafe: { allowUnsafeSshCommand: true, allowUnsafeConfigEnvCount: true },
    timeout: { block: options.timeoutMs ?? 600_000 },
    ...(input === undefined ? {} : { input: () => input }),
  });
  return git.env({ ...ambientEnv(), ...options.env });
}

/** The process environment minus what could redirect git (GIT_DIR from a hook, an EDITOR, a PAGER...). */
export function ambientEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || GUARDED.test(key)) continue;
    env[key] = value;
  }
  return env;
}

const GUARDED = /^(git_.*|editor|visual|pager|prefix|ssh_askpass)$/i;
