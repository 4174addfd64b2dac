// The flags `rlark hub` and `rlark up` share, and their translation into HubOptions.
import path from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import type { HubOptions } from "../hub/index.ts";
import { DEFAULT_HTTP_LIMITS, publicOrigin } from "../lib/http/index.ts";
import { DEFAULT_MAX_STARTUPS, type MaxStartups, parseMaxStartups } from "../lib/tunnel/index.ts";
import { parseByteSize } from "./byte-size.ts";
import { usageError } from "./cli-error.ts";
import { parseDuration } from "./duration.ts";

export interface CommonHubFlags {
  dataDir: string;
  caDir?: string;
  sealDir?: string;
  http: string;
  ssh: string;
  domainRelay?: string;
  /** Unset: go where rlark-net is found, else node (the hub says so in its log). */
  domainRelayEngine?: "node" | "go";
  /** The bastion's Go SSH front for SFTP and ssh -L (ADR 0011); off when unset. */
  sshFront?: string;
  /** The SSH front's TLS data port for agents' byte hop (ADR 0011); off when unset. */
  sshFrontHop?: string;
  repo?: string;
  branch: string;
  path: string;
  interval?: number;
  gitTimeout?: number;
  webhookSecretFile?: string;
  gitTokenFile?: string;
  gitSshKeyFile?: string;
  gitKnownHostsFile?: string;
  statusBranch: string;
  statusCommits: boolean;
  dashboard: boolean;
  selfHeal: boolean;
  feedback?: "github" | "gitea";
  feedbackApiUrl?: string;
  feedbackTokenFile?: string;
  githubAppId?: string;
  githubAppKeyFile?: string;
  githubInstallationId?: string;
  hubName?: string;
  dashboardUrl?: string;
  prPollInterval?: number;
  accessMaxSessions?: number;
  accessIdleTimeout?: number;
  accessRate?: number;
  httpMaxConnections?: number;
  httpMaxConnectionsPerAddress?: number;
  httpHeadersTimeout?: number;
  httpRequestTimeout?: number;
  proxyTimeout?: number;
  publicUrl: string[];
  sshLoginGraceTime?: number;
  sshMaxStartups?: MaxStartups;
  sshPerSourceMaxStartups?: number;
}

export function addCommonHubFlags(command: Command, defaults: { interval: string; ssh: string }): Command {
  return command
    .option("--data-dir <dir>", "where the hub keeps its store, CA, admin token and git mirrors", ".rlark")
    .option(
      "--ca-dir <dir>",
      "read the CA's ca.crt and ca.key from here, e.g. a mounted Secret (or RLARK_CA_DIR; default <data-dir>/pki)",
    )
    .option(
      "--seal-dir <dir>",
      "the sealing keys for SealedSecrets, e.g. a Secret shared by several hubs (or RLARK_SEAL_DIR; default <data-dir>/seal)",
    )
    .option("--http <host:port>", "address of the HTTP API and dashboard", "127.0.0.1:8080")
    .option("--ssh <host:port>", "address of the SSH endpoint for agent tunnels", defaults.ssh)
    .option(
      "--ssh-front <host:port>",
      "also serve users' SFTP and ssh -L on this address through rlark-net ssh-front (Go; every decision stays the hub's; docs/access.md), e.g. 0.0.0.0:2224",
    )
    .option(
      "--ssh-front-hop <host:port>",
      "with --ssh-front: agents started with --access-hop carry ssh -L bytes from their rlark-net to the front's TLS data port here (ADR 0011), e.g. 0.0.0.0:2225",
    )
    .option(
      "--domain-relay <host:port>",
      "serve the domain relay (mutual TLS) that carries cross-cluster Domain traffic here, e.g. 0.0.0.0:2223",
    )
    .addOption(
      new Option(
        "--domain-relay-engine <engine>",
        "what moves the domain relay's bytes: rlark-net relay (Go, splice), which the hub starts and restarts, or the hub's own process (node); default: go where rlark-net is found (RLARK_NET_BIN, PATH), else node",
      ).choices(["go", "node"]),
    )
    .option("--repo <url-or-path>", "git repository of manifests (https, ssh, file URL or local path)")
    .option("--branch <name>", "branch to follow", "main")
    .option("--path <dir>", "folder of the repository that holds the manifests", ".")
    .addOption(
      new Option("--interval <duration>", `how often to fetch (default ${defaults.interval})`).argParser(
        parseDuration,
      ),
    )
    .addOption(
      new Option(
        "--git-timeout <duration>",
        "kill a git fetch, ls-remote or push that shows no progress this long (a frozen git server); retried on the next poll (default 60s)",
      ).argParser(positiveDuration),
    )
    .option(
      "--webhook-secret-file <file>",
      "shared secret(s) of push webhooks, one per line (or RLARK_WEBHOOK_SECRET)",
    )
    .option("--git-token-file <file>", "https token for the repository (or RLARK_GIT_TOKEN)")
    .option("--git-ssh-key-file <file>", "SSH deploy key for the repository")
    .option(
      "--git-known-hosts-file <file>",
      "known_hosts with the git server's SSH host key, checked strictly (default: trust on first use)",
    )
    .option("--status-branch <name>", "branch the hub commits status/<kind>/<name>.yaml to", "rlark/status")
    .option("--no-status-commits", "do not commit status back to git")
    .option("--no-dashboard", "do not serve the read-only dashboard on --http")
    .option(
      "--no-self-heal",
      "Bundles: report a field changed on a cluster by hand (drift) and leave it, instead of applying git's value again",
    )
    .addOption(
      new Option("--feedback <host>", "commit statuses and pull-request plans on this code host").choices([
        "github",
        "gitea",
      ]),
    )
    .option(
      "--feedback-api-url <url>",
      "API root (GitHub Enterprise: https://host/api/v3; Gitea: https://host/api/v1)",
    )
    .option("--feedback-token-file <file>", "code host token (or RLARK_FEEDBACK_TOKEN)")
    .option("--github-app-id <id>", "post as a GitHub App instead of a token")
    .option("--github-app-key-file <file>", "the App's private key (or RLARK_GITHUB_APP_PRIVATE_KEY)")
    .option("--github-installation-id <id>", "the App's installation on the repository's owner")
    .option("--hub-name <name>", "names this hub in status contexts: rlark/sync (<name>)")
    .option("--dashboard-url <url>", "link statuses and plan comments to this dashboard URL")
    .option(
      "--public-url <url>",
      "a URL browsers reach --http at (e.g. https://rlark.example.com behind a TLS proxy); repeatable. WebSockets and cookie-borne changes from other origins are refused",
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .addOption(
      new Option("--pr-poll-interval <duration>", "poll open pull requests (without a webhook); 0 disables")
        .argParser(parseDuration)
        .default(60_000, "60s"),
    )
    .addOption(
      new Option(
        "--access-max-sessions <n>",
        "open SSH sessions, forwards, terminals, log follows and proxied requests per user",
      )
        .argParser(positiveInteger)
        .default(16),
    )
    .addOption(
      new Option("--access-idle-timeout <duration>", "close a session or forward with no bytes for this long")
        .argParser(parseDuration)
        .default(30 * 60_000, "30m"),
    )
    .addOption(
      new Option(
        "--access-rate <bytes-per-second>",
        "bytes per second each user may move each way through all their accesses into pods (0: no limit)",
      )
        .argParser(accessRate)
        .default(0, "0"),
    )
    .addOption(
      new Option("--http-max-connections <n>", "open connections to --http in all (streams included)")
        .argParser(positiveInteger)
        .default(DEFAULT_HTTP_LIMITS.maxConnections),
    )
    .addOption(
      new Option(
        "--http-max-connections-per-address <n>",
        "open connections to --http from one client address",
      )
        .argParser(positiveInteger)
        .default(DEFAULT_HTTP_LIMITS.maxConnectionsPerAddress),
    )
    .addOption(
      new Option(
        "--http-headers-timeout <duration>",
        "close a connection that has not sent its request headers by then",
      )
        .argParser(parseDuration)
        .default(DEFAULT_HTTP_LIMITS.headersTimeoutMs, "20s"),
    )
    .addOption(
      new Option(
        "--http-request-timeout <duration>",
        "close a connection that has not sent its whole request (body included) by then; answers are not cut",
      )
        .argParser(parseDuration)
        .default(DEFAULT_HTTP_LIMITS.requestTimeoutMs, "5m"),
    )
    .addOption(
      new Option(
        "--proxy-timeout <duration>",
        "answer 504 when a pod has not started answering a proxied request by then",
      )
        .argParser(parseDuration)
        .default(30_000, "30s"),
    )
    .addOption(
      new Option(
        "--ssh-login-grace-time <duration>",
        "close an SSH connection that has not logged in within this time (as OpenSSH's LoginGraceTime)",
      )
        .argParser(positiveDuration)
        .default(20_000, "20s"),
    )
    .addOption(
      new Option(
        "--ssh-max-startups <start:rate:full>",
        "SSH connections not yet logged in: from start refuse rate % at random, rising to all at full (as OpenSSH's MaxStartups)",
      )
        .argParser(maxStartups)
        .default(DEFAULT_MAX_STARTUPS, "40:30:120"),
    )
    .addOption(
      new Option(
        "--ssh-per-source-max-startups <n>",
        "SSH connections not yet logged in from one address (as OpenSSH's PerSourceMaxStartups)",
      )
        .argParser(positiveInteger)
        .default(3),
    );
}

function positiveDuration(value: string): number {
  const ms = parseDuration(value);
  if (ms <= 0) throw new InvalidArgumentError("expected a duration above 0, e.g. 20s");
  return ms;
}

function maxStartups(value: string): MaxStartups {
  try {
    return parseMaxStartups(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/** 0 (no limit), or at least 1 KiB/s: below that one SSH packet would wait for most of a minute. */
function accessRate(value: string): number {
  const rate = parseByteSize(value);
  if (rate > 0 && rate < 1024) throw new InvalidArgumentError("expected 0 (no limit) or at least 1KiB");
  return rate;
}

function positiveInteger(value: string): number {
  if (!/^[1-9]\d{0,8}$/.test(value)) throw new InvalidArgumentError("expected a whole number above 0");
  return Number(value);
}

export async function hubOptionsFrom(
  flags: CommonHubFlags,
  defaults: { intervalMs: number },
  env: NodeJS.ProcessEnv = process.env,
): Promise<HubOptions> {
  // Checked before anything is created or read, so a typo leaves no half-made data dir behind.
  checkHostPort("--http", flags.http);
  checkHostPort("--ssh", flags.ssh);
  for (const [flag, ms] of [
    ["--http-headers-timeout", flags.httpHeadersTimeout],
    ["--http-request-timeout", flags.httpRequestTimeout],
    ["--proxy-timeout", flags.proxyTimeout],
  ] as const)
    if (ms !== undefined && !(Number.isInteger(ms) && ms >= 1))
      throw usageError(`${flag}: expected a duration of at least 1ms`);
  if ((flags.httpHeadersTimeout ?? 0) > (flags.httpRequestTimeout ?? Number.POSITIVE_INFINITY))
    throw usageError("--http-headers-timeout: longer than --http-request-timeout, so it could never apply");
  for (const url of flags.publicUrl ?? []) {
    try {
      publicOrigin(url);
    } catch (error) {
      throw usageError(`--public-url: ${(error as Error).message}`);
    }
  }
  if (flags.domainRelay !== undefined) checkHostPort("--domain-relay", flags.domainRelay);
  if (flags.sshFront !== undefined) checkHostPort("--ssh-front", flags.sshFront);
  if (flags.sshFrontHop !== undefined) {
    checkHostPort("--ssh-front-hop", flags.sshFrontHop);
    if (flags.sshFront === undefined) throw usageError("--ssh-front-hop needs --ssh-front");
  }
  const { loadGitCredentials } = await import("../source/index.ts");
  const credentials = await loadGitCredentials({
    tokenFile: flags.gitTokenFile,
    sshKeyFile: flags.gitSshKeyFile,
    knownHostsFile: flags.gitKnownHostsFile,
  });
  const caDir = flags.caDir ?? (env.RLARK_CA_DIR || undefined);
  const sealDir = flags.sealDir ?? (env.RLARK_SEAL_DIR || undefined);
  return {
    dataDir: path.resolve(flags.dataDir),
    ...(caDir ? { caDir: path.resolve(caDir) } : {}),
    ...(sealDir ? { sealDir: path.resolve(sealDir) } : {}),
    http: flags.http,
    ssh: flags.ssh,
    ...(flags.domainRelay ? { domainRelay: flags.domainRelay } : {}),
    ...(flags.sshFront ? { sshFront: flags.sshFront } : {}),
    ...(flags.sshFrontHop ? { sshFrontHop: flags.sshFrontHop } : {}),
    ...(flags.domainRelay && flags.domainRelayEngine ? { domainRelayEngine: flags.domainRelayEngine } : {}),
    repo: flags.repo,
    branch: flags.branch,
    path: flags.path,
    intervalMs: flags.interval ?? defaults.intervalMs,
    ...(flags.gitTimeout === undefined ? {} : { gitTimeoutMs: flags.gitTimeout }),
    credentials,
    webhookSecretFile: flags.webhookSecretFile,
    statusBranch: flags.statusCommits ? flags.statusBranch : undefined,
    dashboard: flags.dashboard,
    selfHeal: flags.selfHeal,
    httpLimits: {
      ...(flags.httpMaxConnections === undefined ? {} : { maxConnections: flags.httpMaxConnections }),
      ...(flags.httpMaxConnectionsPerAddress === undefined
        ? {}
        : { maxConnectionsPerAddress: flags.httpMaxConnectionsPerAddress }),
      ...(flags.httpHeadersTimeout === undefined ? {} : { headersTimeoutMs: flags.httpHeadersTimeout }),
      ...(flags.httpRequestTimeout === undefined ? {} : { requestTimeoutMs: flags.httpRequestTimeout }),
    },
    ...(flags.proxyTimeout ? { proxyResponseTimeoutMs: flags.proxyTimeout } : {}),
    ...(flags.publicUrl.length > 0 ? { publicUrls: flags.publicUrl } : {}),
    access: {
      ...(flags.accessMaxSessions === undefined ? {} : { maxSessionsPerUser: flags.accessMaxSessions }),
      ...(flags.accessIdleTimeout === undefined ? {} : { idleTimeoutMs: flags.accessIdleTimeout }),
      ...(flags.accessRate === undefined ? {} : { bytesPerSecondPerUser: flags.accessRate }),
    },
    sshLimits: {
      ...(flags.sshLoginGraceTime === undefined ? {} : { authTimeoutMs: flags.sshLoginGraceTime }),
      ...(flags.sshMaxStartups === undefined ? {} : { maxStartups: flags.sshMaxStartups }),
      ...(flags.sshPerSourceMaxStartups === undefined
        ? {}
        : { maxUnauthenticatedPerAddress: flags.sshPerSourceMaxStartups }),
    },
    ...(flags.feedback
      ? {
          feedback: {
            provider: {
              kind: flags.feedback,
              ...(flags.feedbackApiUrl ? { apiUrl: flags.feedbackApiUrl } : {}),
              ...(flags.feedbackTokenFile ? { tokenFile: flags.feedbackTokenFile } : {}),
              ...(flags.githubAppId ? { appId: flags.githubAppId } : {}),
              ...(flags.githubAppKeyFile ? { appPrivateKeyFile: flags.githubAppKeyFile } : {}),
              ...(flags.githubInstallationId ? { installationId: flags.githubInstallationId } : {}),
            },
            ...(flags.hubName ? { hubName: flags.hubName } : {}),
            ...(flags.dashboardUrl ? { dashboardUrl: flags.dashboardUrl } : {}),
            ...(flags.prPollInterval === undefined ? {} : { pollIntervalMs: flags.prPollInterval }),
          },
        }
      : {}),
  };
}

/** `host:port`, `[v6]:port` or `:port`, as the hub listens on it; port 0 picks a free one. */
function checkHostPort(flag: string, value: string): void {
  const match = /^(?:\[[^\]]+\]|[^:[\]]*):(\d+)$/.exec(value);
  if (!match) throw usageError(`${flag}: expected host:port, got ${JSON.stringify(value)}`);
  if (Number(match[1]) > 65_535) throw usageError(`${flag}: port ${match[1]} is not in 0-65535`);
}
