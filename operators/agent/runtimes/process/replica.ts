// One pod: a supervised process with a restart policy. Its state machine:
//
//   Pending ──fetch artifact, spawn──▶ Running ──exit──▶ BackOff ──delay──▶ Pending ...  (Deployment, StatefulSet)
//                                         └──────exit──▶ Terminated                      (Job; a bad artifact)
//   any ──terminate()──▶ Stopping ──group gone──▶ Gone (files removed)
//
// Every transition is written to pod.json first, so a new runtime on the same state dir resumes
// exactly here: adopting the running process (pid + start time), or recording how it ended.
// A spawn is bracketed the same way: a launching marker is made durable before it, and the pid
// replaces the marker after it, so a crash in between can never run a Job a second time.
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { closeSync, mkdirSync } from "node:fs";
import { connect as connectTcp } from "node:net";
import { constants } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import type { Duplex, Readable } from "node:stream";
import type { Clock, TimerId } from "../../../lib/clock.ts";
import type { Logger } from "../../../lib/logger.ts";
import { StreamRefused } from "../../../lib/tunnel/index.ts";
import type { AccessEnvironment, ContainerState, LogStreamOptions, ObservedPod, PodPhase } from "../types.ts";
import { type ArtifactCache, ArtifactError } from "./artifact-cache.ts";
import { type BackoffPolicy, nextStreak, restartDelay } from "./crash-loop-backoff.ts";
import {
  commandLine,
  jobOf,
  type Launched,
  openPipe,
  podEnv,
  signalFromStatus,
  spawnLogWriter,
  wrapperArgs,
} from "./launch.ts";
import { pidsListenOn } from "./listening-port.ts";
import { readLogTail, type TailOptions } from "./log-file.ts";
import { logStream } from "./log-follow.ts";
import { type ExitInfo, PodFiles, type PodRecord } from "./pod-files.ts";
import type { PodNetwork, PodNetworks } from "./pod-network.ts";
import type { PodUsers } from "./pod-users.ts";
import { isSameProcessAlive, mayOwnGroup, ownGroupMembers, readProcStat, signalGroup } from "./proc.ts";
import { canonicalJson, type DesiredPod } from "./spec.ts";

export interface ReplicaContext {
  podsDir: string;
  /** Parent of the per-Task default working directories. */
  workDir: string;
  artifacts: ArtifactCache;
  backoff: BackoffPolicy;
  /** SIGTERM to SIGKILL, unless the Task sets its own. */
  gracePeriodMs: number;
  /** How often liveness of adopted processes and the end of a stop are checked. */
  pollIntervalMs: number;
  /** After SIGKILL, how long to wait for the group to vanish before giving up on it. */
  killWaitMs: number;
  /** Each of output.log and output.log.1 stays within this. */
  logMaxBytes: number;
  tail: Omit<TailOptions, "tail">;
  baseEnv: Readonly<Record<string, string>>;
  node(): { name: string; ip: string };
  /** Start and exit times, and the crash-loop restart timer. */
  clock: Clock;
  logger: Logger;
  changed(): void;
  hooks?: LaunchHooks;
  /** Gives pods of Tasks in a Domain their own network; without it they share the host's. */
  network?: PodNetworks;
  /** The uids pods run as (pod-users.ts); without it they run as the agent's user. */
  users?: PodUsers;
  /** The pod's virtual IP, when the last peers state gave it one. */
  virtualIP(key: string): string | undefined;
}

/** Test-only: called at the two points of a launch where a crash is most telling. */
export interface LaunchHooks {
  /** The launching marker is on disk; nothing is spawned yet. */
  afterMarker?(): void;
  /** The processes are spawned; their pids are not recorded yet. */
  afterSpawn?(): void;
}

/** After a run's main process ended, how long its log writer may take to write the rest. */
const WRITER_DRAIN_MS = 5_000;

type Status = "Pending" | "Running" | "BackOff" | "Terminated" | "Stopping" | "Gone";

const iso = (ms: number | undefined): string | undefined =>
  ms === undefined ? undefined : new Date(ms).toISOString();

export class Replica {
  readonly key: string;
  readonly #ctx: ReplicaContext;
  readonly #files: PodFiles;
  #record: PodRecord;
  #status: Status = "Pending";
  #reason: string | undefined;
  #message: string | undefined;
  #child: ChildProcess | undefined;
  #poll: NodeJS.Timeout | undefined;
  #timer: TimerId | undefined;
  #stopping: Promise<void> | undefined;
  #detached = false;
  #launching = false;

  private constructor(record: PodRecord, ctx: ReplicaContext) {
    this.key = `${record.namespace}/${record.name}`;
    this.#ctx = ctx;
    this.#record = record;
    this.#files = new PodFiles(ctx.podsDir, record.namespace, record.name);
  }

  /** A new pod for a desired one: recorded, then launched. */
  static create(pod: DesiredPod, ctx: ReplicaContext): Replica {
    const replica = new Replica(
      {
        version: 1,
        namespace: pod.namespace,
        name: pod.name,
        index: pod.index,
        kind: pod.kind,
        revision: pod.revision,
        task: pod.task,
        restarts: 0,
        streak: 0,
      },
      ctx,
    );
    replica.#files.clearExitCode();
    replica.#persist();
    void replica.#launch();
    return replica;
  }

  /**
   * Resumes a pod recorded by an earlier runtime on this state dir. `found` is what a /proc scan
   * found for a launch the record has a marker for (see {@link Replica.launchToken}).
   */
  static adopt(
    record: PodRecord,
    ctx: ReplicaContext,
    found: { wrapper?: Launched; writer?: Launched } = {},
  ): Replica {
    const replica = new Replica(record, ctx);
    replica.#reclaimUser();
    replica.#resume(found);
    return replica;
  }

  /** The token of a launch that was begun but never recorded as started. */
  static launchToken(record: PodRecord): string | undefined {
    return record.pid === undefined ? record.launching?.token : undefined;
  }

  get revision(): string {
    return this.#record.revision;
  }

  get stopping(): boolean {
    return this.#status === "Stopping" || this.#status === "Gone";
  }

  /** Same revision, newer metadata (generation, labels): nothing to restart, only to report. */
  update(pod: DesiredPod): void {
    if (this.stopping || canonicalJson(pod.task) === canonicalJson(this.#record.task)) return;
    this.#record.task = pod.task;
    this.#persist();
    this.#ctx.changed();
  }

  #resume(found: { wrapper?: Launched; writer?: Launched }): void {
    const r = this.#record;
    if (r.launching && r.pid === undefined) this.#settleLaunch(found);
    if (r.terminating) {
      void this.terminate();
      return;
    }
    if (r.terminal) {
      this.#setStatus("Terminated", r.terminal.reason, r.terminal.message);
      return;
    }
    if (r.pid !== undefined) {
      if (isSameProcessAlive(r.pid, r.processStart)) {
        this.#status = "Running";
        this.#watchAdopted(r.pid, r.processStart);
        this.#ctx.logger.info("adopted running process", { pod: this.key, pid: r.pid });
      } else {
        // It ended while no agent was watching; the wrapper's file says how.
        this.#ended(null, null, false);
      }
      return;
    }
    if (r.launching) {
      // Its command started, and ended or was killed, with no agent watching: that was the run.
      this.#recordStarted(undefined, undefined, r.launching.at);
      this.#ended(null, null, false);
      return;
    }
    // Recorded between runs (backing off or fetching): carry on where it stopped.
    if (r.streak > 0) this.#scheduleRestart();
    else void this.#launch();
  }

  /**
   * An earlier runtime died between writing the launching marker and recording the pid. The run
   * is adopted when its wrapper is still there; it counts as having run when the wrapper got as
   * far as its command (the exit-code file exists); only a run that never started is forgotten,
   * to be launched again.
   */
  #settleLaunch(found: { wrapper?: Launched; writer?: Launched }): void {
    const r = this.#record;
    const at = r.launching?.at ?? this.#ctx.clock.now();
    if (found.writer) r.logWriter = { pid: found.writer.pid, startTime: found.writer.startTime };
    if (found.wrapper) {
      this.#recordStarted(found.wrapper.pid, found.wrapper.startTime, at);
      this.#ctx.logger.info("found a process started by an agent that died", { pod: this.key, pid: r.pid });
    } else if (!this.#files.commandStarted()) {
      r.launching = undefined;
    }
    // Else the marker stays, telling #resume the run happened.
    this.#persist();
  }

  /** Counters and identity of a run that started: restarts, start time, pid. */
  #recordStarted(pid: number | undefined, processStart: number | undefined, at: number): void {
    const r = this.#record;
    if (r.startedAt !== undefined) r.restarts += 1;
    r.pid = pid;
    r.processStart = processStart;
    r.startedAt = at;
    r.finishedAt = undefined;
    r.launching = undefined;
  }

  async #launch(): Promise<void> {
    if (this.stopping || this.#detached || this.#launching) return;
    this.#launching = true;
    try {
      await this.#launchOnce();
    } finally {
      this.#launching = false;
    }
  }

  async #launchOnce(): Promise<void> {
    const pod = this.#desired();
    this.#setStatus("Pending", pod.raw.artifact ? "ArtifactDownloading" : "ContainerCreating");
    let artifactPath: string | undefined;
    if (pod.raw.artifact) {
      try {
        artifactPath = await this.#ctx.artifacts.get(pod.raw.artifact);
      } catch (error) {
        if (this.stopping || this.#detached) return;
        const reason = error instanceof ArtifactError ? error.reason : "ArtifactDownloadFailed";
        const message = (error as Error).message;
        if (reason === "ArtifactChecksumMismatch") {
          // Not transient: retrying the same URL against the same digest cannot succeed.
          this.#terminate("Failed", reason, message);
        } else {
          this.#ctx.logger.warn("artifact download failed; retrying", { pod: this.key, error: message });
          this.#record.streak += 1;
          this.#persist();
          this.#scheduleRestart(reason, message);
        }
        return;
      }
    }
    // Synchronous from here to the pid being recorded: a concurrent terminate() sees either no
    // process (and none will start) or the process.
    if (this.stopping || this.#detached) return;
    const { name: nodeName, ip } = this.#ctx.node();
    const workingDir = this.#workingDir(pod);
    let pipe: { read: number; write: number } | undefined;
    let writer: ChildProcess;
    let child: ChildProcess;
    let argv: string[] = [];
    const token = randomUUID();
    try {
      mkdirSync(workingDir, { recursive: true });
      mkdirSync(this.#files.dir, { recursive: true });
      this.#files.clearExitCode();
      const network = this.#network(pod);
      const asUser = this.#asUser(pod, workingDir);
      this.#record.launching = { token, at: this.#ctx.clock.now() };
      this.#persist();
      this.#ctx.hooks?.afterMarker?.();
      argv = commandLine(
        pod.raw.command,
        pod.raw.args ?? [],
        artifactPath ? dirname(artifactPath) : undefined,
      );
      const env = podEnv({
        base: this.#baseEnv(workingDir),
        pod,
        nodeName,
        podIP: network?.localIP ?? ip,
        ...(artifactPath ? { artifactPath } : {}),
      });
      if (network && this.#ctx.network) argv = this.#ctx.network.podCommand(pod, argv, asUser);
      else argv = [...asUser, ...argv];
      pipe = openPipe(this.#files.pipe);
      writer = spawnLogWriter(pipe.read, this.#files.log, this.#ctx.logMaxBytes, token);
      if (writer.pid === undefined) throw new Error(`could not start the log writer ${process.execPath}`);
      writer.on("error", (error) =>
        this.#ctx.logger.warn("log writer error", { pod: this.key, error: error.message }),
      );
      // detached: a new session and process group, so a stop reaches the command's children too,
      // and the process survives the agent. Its output goes into the log writer's pipe.
      // nsenter execs the wrapper: its pid, and so the process group, stay the same.
      const [program, ...args] = [
        ...(network && this.#ctx.network ? this.#ctx.network.enter(network) : []),
        "/bin/sh",
        ...wrapperArgs(this.#files.exitCode, token, argv),
      ] as [string, ...string[]];
      child = spawn(program, args, {
        cwd: workingDir,
        env,
        detached: true,
        stdio: ["ignore", pipe.write, pipe.write],
      });
    } catch (error) {
      this.#failStart((error as Error).message);
      return;
    } finally {
      // Only the pod and its writer hold the pipe now: the writer sees its end when the pod's do.
      if (pipe) {
        closeSync(pipe.read);
        closeSync(pipe.write);
      }
    }
    const pid = child.pid;
    if (pid === undefined) {
      child.once("error", (error) => this.#failStart(error.message));
      return;
    }
    this.#ctx.hooks?.afterSpawn?.();
    this.#child = child;
    // An unhandled "error" event would take the whole agent down with it.
    child.on("error", (error) =>
      this.#ctx.logger.warn("process error", { pod: this.key, error: error.message }),
    );
    child.once("exit", (code, signal) => {
      if (this.#child === child) this.#child = undefined;
      if (!this.#detached) this.#ended(code, signal);
    });
    const r = this.#record;
    this.#recordStarted(pid, readProcStat(pid)?.startTime, this.#ctx.clock.now());
    r.logWriter = { pid: writer.pid as number, startTime: readProcStat(writer.pid as number)?.startTime };
    this.#persist();
    this.#setStatus("Running");
    this.#ctx.logger.info("started", { pod: this.key, pid, argv });
  }

  /** The pod's own network when its Task is in a Domain and the runtime has pod networks. */
  #network(pod: DesiredPod): PodNetwork | undefined {
    const networks = this.#ctx.network;
    if (!networks || !pod.task.spec.domain) return undefined;
    const cidr = pod.task.spec.domainCIDR;
    if (!cidr)
      throw new Error(
        `spec.domainCIDR is missing: the hub did not know Domain ${pod.task.spec.domain}'s CIDR when it created the Task`,
      );
    const network = networks.ensure(this.key, cidr, this.#record.network);
    this.#record.network = network;
    // a namespace made again (after a reboot) gets the address its pod already holds
    const ip = this.#ctx.virtualIP(this.key);
    if (ip && network.virtualIP !== ip) {
      networks.assignVirtualIP(network, ip);
      network.virtualIP = ip;
    }
    return network;
  }

  #failStart(message: string): void {
    this.#record.launching = undefined;
    if (this.stopping || this.#detached) return;
    this.#ctx.logger.warn("could not start", { pod: this.key, error: message });
    this.#afterExit({ reason: "StartError", message, at: this.#ctx.clock.now() });
  }

  /** Polls an adopted process: it is not our child, so no exit event will come. */
  #watchAdopted(pid: number, processStart: number | undefined): void {
    clearInterval(this.#poll);
    this.#poll = setInterval(() => {
      if (isSameProcessAlive(pid, processStart)) return;
      clearInterval(this.#poll);
      this.#poll = undefined;
      if (!this.#detached && this.#record.pid === pid) this.#ended(null, null);
    }, this.#ctx.pollIntervalMs);
  }

  /**
   * The wrapper (group leader) ended. Like a container, the pod ends with its main process:
   * nothing it left in its group keeps running. Then its log writer finishes the output, and the
   * exit is settled. A run that ended before this runtime opened is settled at once, so its
   * outcome is known before the first desired set: its writer has had all that time to finish.
   */
  #ended(code: number | null, signal: NodeJS.Signals | null, waitForLog = true): void {
    const r = this.#record;
    if (r.pid !== undefined && this.#status !== "Stopping" && mayOwnGroup(r.pid, r.processStart)) {
      signalGroup(r.pid, "SIGKILL");
    }
    if (!waitForLog) r.logWriter = undefined;
    if (this.#writerGone()) {
      this.#exited(code, signal);
      return;
    }
    void this.#writerDone().then(() => {
      if (!this.#detached && this.#status !== "Gone") this.#exited(code, signal);
    });
  }

  #writerGone(): boolean {
    const writer = this.#record.logWriter;
    if (writer && isSameProcessAlive(writer.pid, writer.startTime)) return false;
    this.#record.logWriter = undefined;
    return true;
  }

  /** Waits (bounded) for the current run's log writer to exit, then forgets it; SIGKILL if it lingers. */
  async #writerDone(): Promise<void> {
    const writer = this.#record.logWriter;
    if (!writer) return;
    const deadline = Date.now() + WRITER_DRAIN_MS;
    while (isSameProcessAlive(writer.pid, writer.startTime)) {
      if (Date.now() >= deadline) {
        // A process that escaped the group (setsid) still holds the pipe: the run is over anyway.
        this.#ctx.logger.warn("log writer still running after its pod ended; killing it", {
          pod: this.key,
          pid: writer.pid,
        });
        try {
          process.kill(writer.pid, "SIGKILL");
        } catch {
          // Gone in the meantime.
        }
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    if (this.#record.logWriter === writer) this.#record.logWriter = undefined;
  }

  /** The run is over. Works out how the command ended and applies the restart policy. */
  #exited(code: number | null, signal: NodeJS.Signals | null): void {
    const r = this.#record;
    r.pid = undefined;
    r.processStart = undefined;
    r.launching = undefined;
    const at = this.#ctx.clock.now();
    r.finishedAt = at;
    const status = this.#files.readExitCode() ?? code ?? undefined;
    let exit: ExitInfo;
    if (status !== undefined) {
      const killedBy = signalFromStatus(status);
      exit = killedBy
        ? { exitCode: status, signal: killedBy, reason: "Signaled", message: `killed by ${killedBy}`, at }
        : { exitCode: status, reason: status === 0 ? "Completed" : "Error", at };
    } else if (signal) {
      exit = {
        signal,
        exitCode: 128 + (signalNumber(signal) ?? 0),
        reason: "Signaled",
        message: `killed by ${signal}`,
        at,
      };
    } else {
      exit = {
        reason: "Unknown",
        message: "the process ended while no agent watched and left no exit status",
        at,
      };
    }
    if (this.#status === "Stopping") {
      r.lastExit = exit;
      return;
    }
    this.#ctx.logger.info("exited", { pod: this.key, ...exit });
    this.#afterExit(exit);
  }

  #afterExit(exit: ExitInfo): void {
    const r = this.#record;
    r.lastExit = exit;
    if (r.kind === "Job") {
      if (exit.exitCode === 0) this.#terminate("Succeeded", "Completed");
      else this.#terminate("Failed", exit.reason, exit.message);
      return;
    }
    const ran = r.startedAt !== undefined ? exit.at - r.startedAt : 0;
    r.streak = nextStreak(this.#ctx.backoff, r.streak, ran);
    this.#persist();
    this.#scheduleRestart();
  }

  #scheduleRestart(reason = "CrashLoopBackOff", message?: string): void {
    const delay = restartDelay(this.#ctx.backoff, Math.max(1, this.#record.streak));
    this.#setStatus("BackOff", reason, message ?? `back-off ${delay} ms restarting ${this.key}`);
    this.#clearRestart();
    this.#timer = this.#ctx.clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#launch();
    }, delay);
  }

  #clearRestart(): void {
    if (this.#timer) this.#ctx.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #terminate(phase: "Succeeded" | "Failed", reason: string, message?: string): void {
    this.#record.terminal = message === undefined ? { phase, reason } : { phase, reason, message };
    this.#persist();
    this.#setStatus("Terminated", reason, message);
  }

  /**
   * Stops the pod for good: SIGTERM to its process group, SIGKILL after the grace period, then
   * forgets it (its files are removed). Resolves once no process of the group is left.
   */
  terminate(gracePeriodMs?: number): Promise<void> {
    if (this.#stopping) return this.#stopping;
    this.#clearRestart();
    this.#record.terminating = true;
    this.#persist();
    this.#setStatus("Stopping", "Terminating");
    const grace =
      gracePeriodMs ??
      (this.#record.task.spec.raw?.terminationGracePeriodSeconds !== undefined
        ? this.#record.task.spec.raw.terminationGracePeriodSeconds * 1000
        : this.#ctx.gracePeriodMs);
    this.#stopping = this.#stop(grace);
    return this.#stopping;
  }

  async #stop(graceMs: number): Promise<void> {
    const pgid = this.#record.pid;
    const leaderStart = this.#record.processStart;
    if (pgid !== undefined && this.#groupAlive(pgid, leaderStart)) {
      signalGroup(pgid, "SIGTERM");
      const ended = await this.#waitGroupGone(pgid, leaderStart, graceMs);
      if (!ended && mayOwnGroup(pgid, leaderStart)) {
        this.#ctx.logger.warn("grace period over; killing", { pod: this.key, pgid, graceMs });
        signalGroup(pgid, "SIGKILL");
        if (!(await this.#waitGroupGone(pgid, leaderStart, this.#ctx.killWaitMs))) {
          this.#ctx.logger.error("process group survived SIGKILL", { pod: this.key, pgid });
        }
      }
    }
    clearInterval(this.#poll);
    this.#poll = undefined;
    this.#child?.removeAllListeners("exit");
    this.#child = undefined;
    await this.#writerDone();
    if (this.#record.network) this.#ctx.network?.release(this.#record.network);
    this.#ctx.users?.release(this.key);
    this.#files.remove();
    this.#setStatus("Gone");
  }

  /** The leader may be gone while children it left in the group still run, so members count. */
  #groupAlive(pgid: number, leaderStart: number | undefined): boolean {
    return isSameProcessAlive(pgid, leaderStart) || ownGroupMembers(pgid, leaderStart).length > 0;
  }

  /** Checks the leader cheaply and scans /proc for the rest of the group only once the leader is gone. */
  async #waitGroupGone(pgid: number, leaderStart: number | undefined, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!isSameProcessAlive(pgid, leaderStart) && ownGroupMembers(pgid, leaderStart).length === 0)
        return true;
      if (Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** Stops supervising and leaves the process running, for the next runtime to adopt. */
  detach(): void {
    this.#detached = true;
    this.#clearRestart();
    clearInterval(this.#poll);
    this.#poll = undefined;
    this.#child?.removeAllListeners("exit");
    this.#child?.unref();
    this.#child = undefined;
  }

  #workingDir(pod: DesiredPod): string {
    const taskDir = join(this.#ctx.workDir, `${pod.namespace}_${pod.task.metadata.name}`);
    if (!pod.raw.workingDir) return taskDir;
    return isAbsolute(pod.raw.workingDir) ? pod.raw.workingDir : join(taskDir, pod.raw.workingDir);
  }

  /**
   * Where an access session into this pod runs: the pod's working directory and environment
   * (without RLARK_ARTIFACT, which only a launch resolves), and for a pod with its own network,
   * its namespace and user. Undefined unless the pod is running.
   */
  accessEnvironment(): AccessEnvironment | undefined {
    if (this.#status !== "Running" || this.stopping) return undefined;
    const pod = this.#desired();
    const { name: nodeName, ip } = this.#ctx.node();
    const network = this.#record.network;
    const networks = this.#ctx.network;
    const uid = this.#record.uid;
    const asUser = uid !== undefined && this.#ctx.users ? this.#ctx.users.prefix(uid) : [];
    const cwd = this.#workingDir(pod);
    const prefix = network && networks ? networks.sessionPrefix(network, asUser) : asUser;
    return {
      cwd,
      env: podEnv({ base: this.#baseEnv(cwd), pod, nodeName, podIP: network?.localIP ?? ip }),
      ...(prefix.length > 0 ? { enter: { prefix } } : {}),
    };
  }

  /**
   * The agent's environment for the pod; a pod of its own user has its working dir as HOME and
   * only the PATH directories it can search.
   */
  #baseEnv(workingDir: string): Record<string, string> {
    const { users, baseEnv } = this.#ctx;
    if (this.#record.uid === undefined || !users) return baseEnv;
    return {
      ...baseEnv,
      HOME: workingDir,
      ...(baseEnv.PATH === undefined ? {} : { PATH: users.reachablePath(baseEnv.PATH) }),
    };
  }

  /**
   * The Task's user (pod-users.ts) as a command prefix, kept in the record for the sessions and
   * the next runs; nothing without users, or for a Task that opts into root (raw.runAsRoot),
   * which the agent's log says at every start.
   */
  #asUser(pod: DesiredPod, workingDir: string): string[] {
    const users = this.#ctx.users;
    if (!users) return [];
    if (pod.raw.runAsRoot) {
      users.release(this.key);
      delete this.#record.uid;
      this.#ctx.logger.warn("pod runs as root: its Task sets raw.runAsRoot", {
        pod: this.key,
        task: pod.task.metadata.name,
      });
      return [];
    }
    const task = `${pod.namespace}_${pod.task.metadata.name}`;
    this.#record.uid = users.claim(this.key, task, workingDir, this.#record.uid);
    return users.prefix(this.#record.uid);
  }

  /** An adopted pod holds its uid again, so no other Task is given it. */
  #reclaimUser(): void {
    const uid = this.#record.uid;
    if (uid === undefined || !this.#ctx.users) return;
    const pod = this.#desired();
    try {
      this.#ctx.users.claim(
        this.key,
        `${pod.namespace}_${pod.task.metadata.name}`,
        this.#workingDir(pod),
        uid,
      );
    } catch (error) {
      this.#ctx.logger.warn("could not hold an adopted pod's uid", {
        pod: this.key,
        error: (error as Error).message,
      });
    }
  }

  /**
   * The output as a stream. One file holds every run's output without times, so what needs a
   * time or a run boundary (since, timestamps, previous) is refused rather than approximated.
   */
  logStream(options: LogStreamOptions): Readable {
    const unsupported = (["previous", "timestamps", "sinceSeconds"] as const).filter((o) => options[o]);
    if (unsupported.length > 0)
      throw new Error(
        `the process runtime keeps no times or run boundaries in its logs: ${unsupported.join(", ")} cannot be served`,
      );
    const container = this.#record.task.spec.task;
    if (options.container && options.container !== container)
      throw new Error(
        `pod ${this.#record.name} has no container ${JSON.stringify(options.container)}${container ? ` (it has ${container})` : ""}`,
      );
    return logStream(this.#files.log, this.#ctx.tail, {
      ...(options.tail === undefined ? {} : { tail: options.tail }),
      ...(options.limitBytes === undefined ? {} : { limitBytes: options.limitBytes }),
      ...(options.follow ? { follow: true } : {}),
    });
  }

  /** Puts `ip` on the loopback of the pod's own network, once per address (a no-op without one). */
  assignVirtualIP(ip: string, networks: PodNetworks): void {
    const network = this.#record.network;
    if (!network || this.stopping || network.virtualIP === ip) return;
    networks.assignVirtualIP(network, ip);
    network.virtualIP = ip;
    this.#persist();
  }

  /**
   * A connection to `port` when one of this pod's running processes listens on it; any other port
   * of the machine (another pod's, the hub's under `rlark up`) is refused.
   */
  /** connect()'s checks, then the address it would connect (none for a pod in its own network). */
  async forwardAddress(port: number): Promise<string | undefined> {
    const pgid = this.#record.pid;
    if (this.#status !== "Running" || pgid === undefined) throw new Error(`pod ${this.key} is not running`);
    const pids = ownGroupMembers(pgid, this.#record.processStart);
    if (!(await pidsListenOn(pids, port)))
      throw new StreamRefused(`pod ${this.key} does not listen on port ${port}`);
    if (this.#record.network && this.#ctx.network) return undefined;
    return `127.0.0.1:${port}`;
  }

  async connect(port: number): Promise<Duplex> {
    const pgid = this.#record.pid;
    if (this.#status !== "Running" || pgid === undefined) throw new Error(`pod ${this.key} is not running`);
    const pids = ownGroupMembers(pgid, this.#record.processStart);
    if (!(await pidsListenOn(pids, port)))
      throw new StreamRefused(`pod ${this.key} does not listen on port ${port}`);
    // A pod of its own network is reached inside it, on its own loopback, as an access port-forward.
    const network = this.#record.network;
    if (network && this.#ctx.network) return this.#ctx.network.connect(network, port);
    const socket = connectTcp(port, "127.0.0.1");
    await once(socket, "connect");
    return socket;
  }

  logs(tail?: number): Promise<string> {
    return readLogTail(this.#files.log, { ...this.#ctx.tail, ...(tail === undefined ? {} : { tail }) });
  }

  observe(): ObservedPod {
    const r = this.#record;
    const { name: node, ip } = this.#ctx.node();
    const everStarted = r.startedAt !== undefined;
    let phase: PodPhase;
    let state: ContainerState;
    switch (this.#status) {
      case "Running":
        phase = "Running";
        state = "Running";
        break;
      case "Terminated":
        phase = r.terminal?.phase ?? "Failed";
        state = "Terminated";
        break;
      case "Stopping":
      case "Gone":
        phase = r.terminal?.phase ?? (r.pid !== undefined || everStarted ? "Running" : "Pending");
        state = r.pid !== undefined ? "Running" : "Terminated";
        break;
      default:
        // Restarting pods of an always-restart workload stay Running, as in Kubernetes.
        phase = everStarted ? "Running" : "Pending";
        state = "Waiting";
    }
    const pod: ObservedPod = {
      name: r.name,
      namespace: r.namespace,
      task: r.task.metadata.name,
      taskUid: r.task.metadata.uid ?? "",
      job: jobOf(r.task),
      node,
      index: r.index,
      phase,
      state,
      ready: this.#status === "Running",
      podIP: r.network?.localIP ?? ip,
      hostIP: ip,
      restarts: r.restarts,
    };
    if (r.task.metadata.generation !== undefined) pod.generation = r.task.metadata.generation;
    if (this.stopping) pod.terminating = true;
    const exit = r.lastExit;
    if (exit && this.#status !== "Running") {
      if (exit.exitCode !== undefined) pod.exitCode = exit.exitCode;
      if (exit.signal) pod.signal = exit.signal;
    }
    const reason = this.#reason ?? (this.#status === "Running" ? undefined : exit?.reason);
    const message = this.#message ?? (this.#status === "Running" ? undefined : exit?.message);
    if (reason) pod.reason = reason;
    if (message) pod.message = message;
    const start = iso(r.startedAt);
    if (start) pod.startTime = start;
    const finish = this.#status === "Running" ? undefined : iso(r.finishedAt);
    if (finish) pod.finishTime = finish;
    if (r.pid !== undefined) pod.pid = r.pid;
    // A pod's one process stands for its one container, named as the template that made it.
    if (r.task.spec.task) pod.container = r.task.spec.task;
    return pod;
  }

  #desired(): DesiredPod {
    const r = this.#record;
    const raw = r.task.spec.raw ?? { command: [] };
    return {
      key: this.key,
      namespace: r.namespace,
      name: r.name,
      index: r.index,
      kind: r.kind,
      task: r.task,
      raw,
      revision: r.revision,
    };
  }

  #setStatus(status: Status, reason?: string, message?: string): void {
    this.#status = status;
    this.#reason = reason;
    this.#message = message;
    this.#ctx.changed();
  }

  #persist(): void {
    if (this.#status === "Gone") return;
    this.#files.write(this.#record);
  }
}

function signalNumber(signal: NodeJS.Signals): number | undefined {
  return (constants.signals as Record<string, number | undefined>)[signal];
}
