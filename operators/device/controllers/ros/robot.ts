// The robot software's lifecycle: its processes (roscore then roslaunch for ROS 1, one launch for
// ROS 2) under Supervisors, their merged log, the readiness check, and the one process state and
// health they add up to (seed 002).
import type { Clock } from "../../../lib/clock.ts";
import type { CapabilityState, Health, ProcessState } from "../../capability-file.ts";
import { LogRing } from "../log-ring.ts";
import { Supervisor, type SupervisorStatus } from "../supervisor.ts";
import type { RosControllerConfig } from "./config.ts";
import { type ProbeResult, ReadyProbe } from "./ready-probe.ts";

export interface RobotStatus extends CapabilityState {
  flavor: string;
  processes: SupervisorStatus[];
}

export class Robot {
  readonly config: RosControllerConfig;
  readonly logs: LogRing;
  readonly #supervisors: Supervisor[];
  readonly #probe: ReadyProbe | undefined;
  readonly #onChange: () => void;
  #requested = false;
  #probed: ProbeResult | undefined;
  #everReady = false;

  constructor(config: RosControllerConfig, onChange: () => void, clock?: Clock) {
    this.config = config;
    this.#onChange = onChange;
    this.logs = new LogRing(config.logs);
    const env = { ...process.env, ...config.env };
    this.#supervisors = config.processes.map(
      (p) =>
        new Supervisor({
          name: p.name,
          command: p.command,
          env,
          ...(config.cwd ? { cwd: config.cwd } : {}),
          ...config.restart,
          maxLineBytes: config.logs.maxLineBytes,
          onLine: (stream, line) => this.logs.push(p.name, stream, line),
          onChange: () => this.#changed(),
          ...(clock ? { clock } : {}),
        }),
    );
    if (config.ready) {
      this.#probe = new ReadyProbe({
        ...config.ready,
        env,
        ...(config.cwd ? { cwd: config.cwd } : {}),
        onResult: (result) => {
          const before = JSON.stringify(this.#probed);
          this.#probed = result;
          if (result.ok) this.#everReady = true;
          if (JSON.stringify(result) !== before) onChange();
        },
        ...(clock ? { clock } : {}),
      });
    }
  }

  /** Starts the first process; each next one starts once the one before it is RUNNING. */
  async start(): Promise<void> {
    if (this.status().process === "STOPPED") {
      this.#probed = undefined;
      this.#everReady = false;
    }
    this.#requested = true;
    // Those stopped or given up whose predecessor runs; the rest follow in #changed.
    for (const [i, supervisor] of this.#supervisors.entries()) {
      const ready = i === 0 || this.#supervisors[i - 1]?.state === "RUNNING";
      if (ready && (supervisor.state === "STOPPED" || supervisor.state === "FAILED"))
        await supervisor.start();
    }
  }

  /** Stops in reverse order (the launch before the master it talks to). */
  async stop(): Promise<void> {
    this.#requested = false;
    this.#probe?.stop();
    for (const supervisor of [...this.#supervisors].reverse()) await supervisor.stop();
    this.#onChange();
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  #changed(): void {
    if (this.#requested) {
      // The chain: a process starts when its predecessor runs.
      this.#supervisors.forEach((supervisor, i) => {
        const before = this.#supervisors[i - 1];
        if (i > 0 && before?.state === "RUNNING" && supervisor.state === "STOPPED") void supervisor.start();
      });
      if (this.#probe && this.#supervisors.every((s) => s.state === "RUNNING")) this.#probe.start();
    }
    this.#onChange();
  }

  status(): RobotStatus {
    const processes = this.#supervisors.map((s) => s.status());
    const states = processes.map((p) => p.state);
    const process: ProcessState = states.includes("FAILED")
      ? "FAILED"
      : states.includes("BACKOFF")
        ? "BACKOFF"
        : states.every((s) => s === "RUNNING")
          ? "RUNNING"
          : states.every((s) => s === "STOPPED") && !this.#requested
            ? "STOPPED"
            : "STARTING";
    const [health, message] = this.#health(process, processes);
    return { flavor: this.config.flavor, process, health, message, processes };
  }

  #health(process: ProcessState, processes: SupervisorStatus[]): [Health, string] {
    const troubled = processes.find((p) => p.state === "FAILED" || p.state === "BACKOFF");
    switch (process) {
      case "STOPPED":
        return ["STOPPED", ""];
      case "FAILED":
        return ["DEGRADED", `${troubled?.name} gave up restarting (${troubled?.lastExit})`];
      case "BACKOFF":
        return [
          "DEGRADED",
          `${troubled?.name} ended (${troubled?.lastExit}); restarting at ${troubled?.restartAt}`,
        ];
      case "STARTING":
        return ["STARTING", `starting ${processes.find((p) => p.state !== "RUNNING")?.name ?? ""}`];
      case "RUNNING":
        if (!this.#probe) return ["READY", ""];
        if (!this.#probed) return ["STARTING", "waiting for the readiness check"];
        if (this.#probed.ok) return ["READY", this.#probed.message];
        return [this.#everReady ? "DEGRADED" : "STARTING", this.#probed.message];
    }
  }
}
