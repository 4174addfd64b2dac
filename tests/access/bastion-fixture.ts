// A hub on git with Users (keys generated here), AccessPolicies and a running Raw pod, a
// process-runtime agent in this process, and the real OpenSSH client pointed at the hub.
// With RLARK_TEST_SSH_FRONT=go the bed's `port` is the hub's Go SSH front (rlark-net ssh-front,
// ADR 0011; built here by hack/network/build-rlark-net): the same files and assertions then cover
// its SFTP and forwards (it serves no shells: the shell tests are for the ssh2 port).
import { type ChildProcess, execFileSync, type SpawnOptions, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Test } from "tap";
import type { AuditRecord } from "../../operators/access/index.ts";
import type { AccessOptions } from "../../operators/agent/access/index.ts";
import type { Agent } from "../../operators/agent/agent.ts";
import { ProcessRuntime } from "../../operators/agent/runtimes/process/index.ts";
import type { Runtime } from "../../operators/agent/runtimes/types.ts";
import type { HubOptions } from "../../operators/hub/hub.ts";
import { startAgentOnHub } from "../helpers/agent-on-hub.ts";
import { type HubOnGit, startHubOnGit } from "../helpers/hub-on-git.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

/** OpenSSH client options for the hub's SSH port: no user config, the hub's host key pinned, one key. */
export const openSshArgs = (knownHosts: string, key: string, port: string | number): string[] => [
  "-F",
  "/dev/null",
  "-o",
  `UserKnownHostsFile=${knownHosts}`,
  "-o",
  "StrictHostKeyChecking=yes",
  "-o",
  "BatchMode=yes",
  "-o",
  "IdentitiesOnly=yes",
  "-o",
  "LogLevel=ERROR",
  "-i",
  key,
  "-p",
  String(port),
];

/** The hub's audit lines so far (none before the first). */
/**
 * `ssh -N -L <forward>` as alice through the hub's bastion (`forward` is `localPort:pod:podPort`),
 * killed when the test ends; the forward is ready once its local port connects.
 */
export function sshForward(t: Test, sshArgs: string[], forward: string): ChildProcess {
  const child = spawn(
    "ssh",
    [...sshArgs, "-N", "-o", "ExitOnForwardFailure=yes", "-L", forward, "alice@127.0.0.1"],
    { stdio: "ignore" },
  );
  t.teardown(() => child.kill());
  return child;
}

/** A connection to an `ssh -L` port, once ssh listens on it (some time after it starts). */
export function forwardedSocket(localPort: number): Promise<Socket> {
  return waitFor(
    "the forwarded port listening",
    () =>
      new Promise<Socket | undefined>((resolve) => {
        const s = connect(localPort, "127.0.0.1");
        s.once("connect", () => resolve(s));
        s.once("error", () => resolve(undefined));
      }),
    onRealServers,
  );
}

export const readAudit = async (file: string): Promise<AuditRecord[]> =>
  (await readFile(file, "utf8").catch(() => ""))
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as AuditRecord);

export const clusterYaml = `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata:
  name: local
spec:
  runtime: process
`;

export function userYaml(name: string, roles: string[], keys: string[]): string {
  return `apiVersion: rlinf.io/v1alpha1
kind: User
metadata:
  name: ${name}
spec:
  roles: [${roles.join(", ")}]
  sshPublicKeys:
${keys.map((k) => `    - ${JSON.stringify(k)}\n`).join("")}`;
}

export function policyYaml(name: string, spec: string): string {
  return `apiVersion: rlinf.io/v1alpha1
kind: AccessPolicy
metadata:
  name: ${name}
spec:
${spec}`;
}

/** A long-running Raw pod `<name>-main-0` whose working directory holds `marker.txt`. */
export function podJobYaml(name: string, labels = "    team: vision\n"): string {
  return `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: ${name}
  labels:
${labels}spec:
  tasks:
    - name: main
      role: Actor
      agentType: Raw
      raw:
        kind: Deployment
        command: ["sh", "-c", "echo here > marker.txt; exec sleep 3600"]
        env:
          - name: POD_SECRET_HINT
            value: from-the-pod
`;
}

export interface Bastion {
  running: HubOnGit;
  /** The in-process agent of cluster `local` (stopping it cuts its tunnel). */
  agent: Agent;
  dir: string;
  /** Private key files by user. */
  keys: Record<string, string>;
  knownHosts: string;
  port: number;
  /** ssh arguments before the destination, for `user`. */
  sshArgs(user: string): string[];
  audit(): Promise<AuditRecord[]>;
  /** Commits `files` and waits until the hub has applied the revision. */
  commit(files: Record<string, string | null>): Promise<void>;
}

/**
 * The hub options of RLARK_TEST_SSH_FRONT=go (none otherwise), or of the front `always`; =hop
 * also runs the agents' byte hop (ADR 0011), which startBastion's agent then uses.
 */
export function sshFrontOptions(always = false): Partial<HubOptions> {
  const mode = process.env.RLARK_TEST_SSH_FRONT;
  if (!always && mode !== "go" && mode !== "hop") return {};
  const root = path.resolve(import.meta.dirname, "../..");
  const rlarkNet = execFileSync(path.join(root, "hack/network/build-rlark-net"), { encoding: "utf8" }).trim();
  return { sshFront: "127.0.0.1:0", rlarkNet, ...(mode === "hop" ? { sshFrontHop: "127.0.0.1:0" } : {}) };
}

export function keygen(dir: string, name: string): { file: string; line: string } {
  const file = path.join(dir, name);
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", `${name}@test`, "-f", file]);
  return { file, line: execFileSync("ssh-keygen", ["-y", "-f", file]).toString().trim() };
}

export async function startBastion(
  t: Test,
  options: {
    users: string[];
    files: (keys: Record<string, string>) => Record<string, string>;
    pods?: string[];
    /** Changes to the hub's options (e.g. access limits). */
    hub?: Partial<HubOptions>;
    /** The agent's access programs (e.g. an sftp-server that cannot start). */
    access?: AccessOptions;
    /** The rlark-net binary of the agent's byte hop (ADR 0011). */
    accessHop?: string;
  },
): Promise<Bastion> {
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-bastion-"));
  // teardowns run last-added first: this one after the runtime and the hub have stopped
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const keys: Record<string, string> = {};
  const lines: Record<string, string> = {};
  for (const user of options.users) {
    const key = keygen(dir, user);
    keys[user] = key.file;
    lines[user] = key.line;
  }
  const running = await startHubOnGit(t, {
    ...sshFrontOptions(),
    ...options.hub,
    files: { "cluster.yaml": clusterYaml, ...options.files(lines) },
  });
  const { hub } = running;
  await waitFor(
    "the repository applied",
    async () => {
      const errors = hub.source?.watcher.status().errors ?? [];
      if (errors.length > 0) throw new Error(JSON.stringify(errors));
      return (await hub.store.get("Cluster", undefined, "local")) !== undefined;
    },
    { ...onRealServers, attempts: 1200 },
  );
  const runtime = await ProcessRuntime.open({
    stateDir: path.join(dir, "state"),
    // HOME is the test's own: a login shell in a pod must not read this machine's ~/.bashrc
    // (a stale pyenv lock there once held every interactive bash for 60 s)
    baseEnv: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, LANG: "C.UTF-8" },
    nodeName: "bastion-test-node",
    terminationGracePeriodMs: 2_000,
  });
  // The agent stops its runtime at teardown: make that stop end the test's pods too.
  const stopping: Runtime = new Proxy(runtime, {
    get(target, property) {
      if (property === "stop") return () => target.stop({ terminatePods: true });
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  t.teardown(() => runtime.stop({ terminatePods: true }));
  const agent = await startAgentOnHub(t, hub, "local", {
    runtime: stopping,
    runtimeKind: "process",
    ...(options.access ? { access: options.access } : {}),
    ...(options.accessHop
      ? { accessHop: options.accessHop }
      : running.hub.sshFront?.process.hopPort
        ? { accessHop: sshFrontOptions(true).rlarkNet as string }
        : {}),
  });
  for (const pod of options.pods ?? []) {
    await waitFor(
      `pod ${pod} running`,
      async () => {
        const object = await hub.store.get("Pod", "agent-local", pod);
        return (object?.status as { phase?: string } | undefined)?.phase === "Running";
      },
      { ...onRealServers, attempts: 1200 },
    );
  }
  const knownHosts = path.join(dir, "known_hosts");
  const front = hub.sshFront;
  const port = Number((front?.address ?? hub.sshAddress).split(":")[1]);
  // The front presents the hub's own host key, on its own port.
  const frontLine = front ? hub.knownHosts.replace(/^\S+/, `[127.0.0.1]:${port}`) : "";
  await writeFile(knownHosts, `${hub.knownHosts}\n${frontLine ? `${frontLine}\n` : ""}`);
  return {
    running,
    agent,
    dir,
    keys,
    knownHosts,
    port,
    sshArgs: (user) => openSshArgs(knownHosts, keys[user] as string, port),
    audit: () => readAudit(hub.audit.path),
    async commit(files) {
      const revision = await running.git.commit(files);
      await waitFor(
        `revision ${revision} applied`,
        () => running.hub.source?.watcher.status().lastAppliedRevision === revision,
        { ...onRealServers, attempts: 1200 },
      );
    },
  };
}

/**
 * The usual bed: alice (role user) with her generated key, the vision Job's pod vision-main-0,
 * and one AccessPolicy (`policy`, as policyYaml writes it).
 */
export function startAliceBastion(t: Test, policy: string, hub?: Partial<HubOptions>): Promise<Bastion> {
  return startBastion(t, {
    users: ["alice"],
    pods: ["vision-main-0"],
    ...(hub ? { hub } : {}),
    files: (keys) => ({
      "users.yaml": userYaml("alice", ["user"], [keys.alice as string]),
      "job.yaml": podJobYaml("vision"),
      "policy.yaml": policy,
    }),
  });
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a client program to its end with `input` on stdin (bounded output). */
export function run(command: string, args: string[], input = "", options: SpawnOptions = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (d: Buffer) => {
      if (stdout.length < 1_000_000) stdout += d.toString();
    });
    child.stderr?.on("data", (d: Buffer) => {
      if (stderr.length < 1_000_000) stderr += d.toString();
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin?.end(input);
  });
}

export interface SshShell {
  /** Everything the terminal printed so far (stdout and stderr, bounded). */
  output(): string;
  /** Writes `text` to the shell, as typed. */
  type(text: string): void;
  /** ssh's exit code once it ends. */
  exited: Promise<number | null>;
}

/**
 * `ssh -tt` into a shell, typed into as a user types (the caller waits for an answer before the
 * next line: input sent before the shell is up may go to its terminal queries). TERM is
 * xterm-256color; ssh is killed at the test's end.
 */
export function sshShell(t: Test, args: string[]): SshShell {
  const ssh = spawn("ssh", [...args.slice(0, -1), "-tt", ...args.slice(-1)], {
    env: { ...process.env, TERM: "xterm-256color" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  t.teardown(() => ssh.kill());
  let output = "";
  const add = (d: Buffer) => {
    if (output.length < 1_000_000) output += d.toString();
  };
  ssh.stdout?.on("data", add);
  ssh.stderr?.on("data", add);
  return {
    output: () => output,
    type: (text) => ssh.stdin?.write(text),
    exited: new Promise((resolve) => ssh.once("close", resolve)),
  };
}
