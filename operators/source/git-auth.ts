import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { access, chmod, copyFile, mkdir, readFile } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

/** How the hub proves itself to the git server. Secrets live only here and in git's environment. */
export interface GitCredentials {
  /** https token (GitHub/Gitea personal access or installation token). */
  token?: string;
  /** Username sent with the token; defaults to `x-access-token`, which GitHub and Gitea accept. */
  username?: string;
  /** Path to an SSH private key (deploy key). Copied into the data dir with mode 0600. */
  sshKeyFile?: string;
  /**
   * `--git-known-hosts-file`: the only host keys trusted, strictly (an unlisted or changed key is
   * refused, and the file is never written). Without it: `<dataDir>/git/known_hosts`, trusting the
   * first key seen and pinning it.
   */
  knownHostsFile?: string;
}

export interface GitAuth {
  /** The URL handed to git: no credentials in it, local paths made absolute. */
  readonly remoteUrl: string;
  /** The URL safe to show anywhere: status, logs, errors. */
  readonly displayUrl: string;
  /** Extra environment for every git process that talks to the remote. */
  readonly env: Readonly<Record<string, string>>;
  /** Removes every credential (and any URL userinfo) from a text, e.g. git's stderr. */
  redact(text: string): string;
}

export interface LoadGitCredentialsOptions {
  tokenFile?: string;
  sshKeyFile?: string;
  knownHostsFile?: string;
  env?: NodeJS.ProcessEnv;
}

/** Reads `--git-token-file` (or `RLARK_GIT_TOKEN`), `--git-ssh-key-file` and `--git-known-hosts-file`. */
export async function loadGitCredentials(options: LoadGitCredentialsOptions = {}): Promise<GitCredentials> {
  const env = options.env ?? process.env;
  const credentials: GitCredentials = {};
  if (options.tokenFile) {
    const token = (await readFile(options.tokenFile, "utf8")).trim();
    if (token) credentials.token = token;
  } else if (env.RLARK_GIT_TOKEN?.trim()) {
    credentials.token = env.RLARK_GIT_TOKEN.trim();
  }
  if (options.sshKeyFile) credentials.sshKeyFile = options.sshKeyFile;
  if (options.knownHostsFile) {
    // Absolute: git runs ssh from the mirror's directory. Checked now, not at the first fetch.
    const file = resolve(options.knownHostsFile);
    await access(file, constants.R_OK).catch((error: NodeJS.ErrnoException) => {
      const reason =
        error.code === "ENOENT" ? "no such file" : error.code === "EACCES" ? "not readable" : error.message;
      throw new Error(`--git-known-hosts-file ${file}: ${reason}`);
    });
    credentials.knownHostsFile = file;
  }
  return credentials;
}

const SCP_LIKE = /^(?<user>[^@/\s]+@)?(?<host>[^:/\s]+):(?<path>(?!\/\/).*)$/;

function isUrl(text: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(text);
}

/** Strips userinfo from http(s) URLs (it may be a token); keeps the harmless `git@` of SSH URLs. */
export function scrubUrl(url: string): string {
  if (!isUrl(url)) return url;
  try {
    const parsed = new URL(url);
    if (parsed.protocol === "http:" || parsed.protocol === "https:") {
      parsed.username = "";
      parsed.password = "";
    } else {
      parsed.password = "";
    }
    return parsed.toString();
  } catch {
    return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/i, "$1");
  }
}

/** A stable directory name for a remote: the same repo always lands in the same place. */
export function repoKey(url: string): string {
  return createHash("sha256")
    .update(scrubUrl(normaliseLocation(url)))
    .digest("hex")
    .slice(0, 16);
}

function normaliseLocation(url: string): string {
  if (isUrl(url) || SCP_LIKE.test(url)) return url;
  return pathToFileURL(isAbsolute(url) ? url : resolve(url)).toString();
}

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * Turns a repository location plus credentials into what git needs. A token travels as an
 * `http.<origin>/.extraHeader` in GIT_CONFIG_* variables, never in the URL, the argv or a config file,
 * and only to the origin it belongs to.
 */
export async function prepareGitAuth(options: {
  url: string;
  credentials?: GitCredentials;
  dataDir: string;
}): Promise<GitAuth> {
  const given = options.credentials ?? {};
  const secrets = new Set<string>();
  let remoteUrl = normaliseLocation(options.url);
  let token = given.token;
  let username = given.username;
  const env: Record<string, string> = { GIT_TERMINAL_PROMPT: "0" };

  if (isUrl(remoteUrl)) {
    const parsed = new URL(remoteUrl);
    if (
      (parsed.protocol === "http:" || parsed.protocol === "https:") &&
      (parsed.username || parsed.password)
    ) {
      const user = decodeURIComponent(parsed.username);
      const password = decodeURIComponent(parsed.password);
      // https://TOKEN@host and https://user:TOKEN@host are both common ways to paste a token.
      if (password) {
        token ??= password;
        username ??= user;
        secrets.add(password);
      } else {
        token ??= user;
      }
      secrets.add(user);
      secrets.add(parsed.username);
      secrets.add(parsed.password);
      parsed.username = "";
      parsed.password = "";
      remoteUrl = parsed.toString();
    }
    if (token && (parsed.protocol === "http:" || parsed.protocol === "https:")) {
      const basic = Buffer.from(`${username || "x-access-token"}:${token}`).toString("base64");
      secrets.add(token);
      secrets.add(basic);
      env.GIT_CONFIG_COUNT = "1";
      env.GIT_CONFIG_KEY_0 = `http.${parsed.origin}/.extraHeader`;
      env.GIT_CONFIG_VALUE_0 = `Authorization: Basic ${basic}`;
    }
  }
  if (token) secrets.add(token);

  if (given.sshKeyFile || given.knownHostsFile) {
    const command = ["ssh"];
    if (given.sshKeyFile) {
      const keysDir = join(options.dataDir, "git", "keys");
      await mkdir(keysDir, { recursive: true, mode: 0o700 });
      const key = join(keysDir, `${repoKey(options.url)}.key`);
      // Mounted secrets are often 0644; ssh refuses such keys, and they should not be readable anyway.
      await copyFile(given.sshKeyFile, key);
      await chmod(key, 0o600);
      command.push("-i", shellQuote(key), "-o IdentitiesOnly=yes");
    }
    command.push("-o BatchMode=yes", "-o LogLevel=ERROR");
    if (given.knownHostsFile) {
      // Exactly the keys given: no system-wide file widens them, and ssh never edits the file.
      command.push(
        "-o StrictHostKeyChecking=yes",
        `-o UserKnownHostsFile=${shellQuote(given.knownHostsFile)}`,
        "-o GlobalKnownHostsFile=/dev/null",
        "-o UpdateHostKeys=no",
      );
    } else {
      command.push(
        "-o StrictHostKeyChecking=accept-new",
        `-o UserKnownHostsFile=${shellQuote(join(options.dataDir, "git", "known_hosts"))}`,
      );
    }
    env.GIT_SSH_COMMAND = command.join(" ");
  }

  const displayUrl = scrubUrl(options.url);
  const hidden = [...secrets].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
  return {
    remoteUrl,
    displayUrl,
    env,
    redact(text: string): string {
      let out = text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s'"]*@/gi, (match, scheme: string) =>
        /^(ssh|git\+ssh):/i.test(scheme) ? match : scheme,
      );
      for (const secret of hidden) out = out.split(secret).join("***");
      return out;
    },
  };
}
