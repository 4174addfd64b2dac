// One configured camera: its ffmpeg under a Supervisor, the frames ffmpeg reports, the tail of its
// stderr, its health, and its latest frame for snapshots.
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import type { Clock } from "../../../lib/clock.ts";
import type { CapabilityState, Health, ProcessState } from "../../capability-file.ts";
import { LogRing } from "../log-ring.ts";
import { Supervisor } from "../supervisor.ts";
import type { CameraConfig, CameraControllerConfig } from "./config.ts";
import { ffmpegArgs, redactUrl, snapshotFileOf } from "./ffmpeg-args.ts";
import { type JpegInfo, jpegInfo } from "./jpeg.ts";

export interface CameraStatus {
  name: string;
  sourceType: string;
  source: string;
  output: string;
  process: ProcessState;
  health: Health;
  message: string;
  pid: number;
  restarts: number;
  frames: number;
  fps: number;
  startedAt: string;
  lastExit: string;
  stderrTail: string[];
}

export interface Snapshot extends JpegInfo {
  jpeg: Buffer;
  capturedAt: string;
}

export class SnapshotError extends Error {}

const STDERR_LINES = 50;

/** Whether librealsense2 is on this machine (ldconfig's cache or the usual library directories). */
export function librealsensePresent(): boolean {
  return ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/local/lib", "/usr/lib"].some(
    (dir) => existsSync(`${dir}/librealsense2.so`),
  );
}

export class Camera {
  readonly config: CameraConfig;
  readonly #settings: CameraControllerConfig;
  readonly #supervisor: Supervisor | undefined;
  readonly #stderr = new LogRing({ maxLines: STDERR_LINES, maxLineBytes: 1024 });
  readonly #clock: Clock | undefined;
  readonly #unavailable: string | undefined;
  readonly #onChange: () => void;
  #frames = 0;
  #fps = 0;
  #lastFrameAt = 0;
  #requested = false;

  constructor(config: CameraConfig, settings: CameraControllerConfig, onChange: () => void, clock?: Clock) {
    this.config = config;
    this.#settings = settings;
    this.#clock = clock;
    this.#onChange = onChange;
    if (config.source.type === "realsense") {
      // RealSense depth and colour need librealsense; ffmpeg alone cannot open the camera.
      this.#unavailable = librealsensePresent()
        ? "RealSense capture through librealsense is not implemented; configure the colour stream's /dev/videoN as a v4l2 source"
        : "librealsense not available";
      return;
    }
    const plan = ffmpegArgs(config, settings);
    this.#supervisor = new Supervisor({
      name: "ffmpeg",
      command: plan.argv,
      ...settings.restart,
      maxLineBytes: 4096,
      onLine: (stream, line) =>
        stream === "stdout" ? this.#progress(line) : this.#stderr.push("ffmpeg", stream, line),
      onChange: () => {
        if (this.#supervisor?.state === "STARTING") {
          this.#frames = 0;
          this.#fps = 0;
        }
        onChange();
      },
      ...(clock ? { clock } : {}),
    });
  }

  async start(): Promise<void> {
    this.#requested = true;
    if (!this.#supervisor) {
      this.#onChange();
      return;
    }
    mkdirSync(this.#settings.stateDir, { recursive: true, mode: 0o750 });
    // A frame left from an earlier run must not pass for this one's.
    if (this.#supervisor.state === "STOPPED" || this.#supervisor.state === "FAILED")
      rmSync(snapshotFileOf(this.#settings.stateDir, this.config.name), { force: true });
    if (this.config.output.type === "hls") mkdirSync(this.config.output.dir, { recursive: true });
    await this.#supervisor.start();
  }

  async stop(): Promise<void> {
    this.#requested = false;
    if (this.#supervisor) await this.#supervisor.stop();
    else this.#onChange();
  }

  #progress(line: string): void {
    const eq = line.indexOf("=");
    const key = line.slice(0, eq);
    const value = line.slice(eq + 1);
    if (key === "frame") {
      const frames = Number(value);
      if (Number.isFinite(frames) && frames > this.#frames) {
        const first = this.#frames === 0;
        this.#frames = frames;
        this.#lastFrameAt = this.#now();
        if (first) this.#onChange();
      }
    } else if (key === "fps") {
      const fps = Number(value);
      if (Number.isFinite(fps)) this.#fps = fps;
    }
  }

  #now(): number {
    return this.#clock?.now() ?? Date.now();
  }

  capability(): CapabilityState {
    const s = this.status();
    return { process: s.process, health: s.health, message: s.message };
  }

  status(): CameraStatus {
    const source = this.config.source;
    const where =
      source.type === "v4l2"
        ? source.device
        : source.type === "file"
          ? source.path
          : source.type === "testsrc"
            ? `${source.width}x${source.height}@${source.fps}`
            : source.type === "realsense"
              ? (source.serial ?? "")
              : redactUrl(source.url);
    const output = this.config.output;
    const base = {
      name: this.config.name,
      sourceType: source.type,
      source: where,
      output:
        output.type === "hls" ? `hls:${output.dir}` : output.type === "none" ? "none" : redactUrl(output.url),
      stderrTail: this.#stderr.tail(STDERR_LINES).map((l) => l.text),
    };
    if (!this.#supervisor) {
      return {
        ...base,
        process: this.#requested ? "FAILED" : "STOPPED",
        health: this.#requested ? "DEGRADED" : "STOPPED",
        message: this.#unavailable ?? "",
        pid: 0,
        restarts: 0,
        frames: 0,
        fps: 0,
        startedAt: "",
        lastExit: "",
      };
    }
    const p = this.#supervisor.status();
    const [health, message] = this.#health(p.state, p.lastExit, p.restartAt);
    return {
      ...base,
      process: p.state,
      health,
      message,
      pid: p.pid,
      restarts: p.restarts,
      frames: this.#frames,
      fps: this.#fps,
      startedAt: p.startedAt,
      lastExit: p.lastExit,
    };
  }

  #health(state: ProcessState, lastExit: string, restartAt: string): [Health, string] {
    const lastError = this.#stderr.tail(1)[0]?.text ?? "";
    const why = [lastExit && `ffmpeg ended (${lastExit})`, lastError].filter(Boolean).join(": ");
    switch (state) {
      case "STOPPED":
        return ["STOPPED", ""];
      case "FAILED":
        return ["DEGRADED", `gave up restarting: ${why}`];
      case "BACKOFF":
        return ["DEGRADED", `restarting at ${restartAt}: ${why}`];
      default: {
        if (this.#frames === 0) return ["STARTING", "waiting for the first frame"];
        const idle = this.#now() - this.#lastFrameAt;
        if (idle > this.#settings.stallMs)
          return ["DEGRADED", `no new frame for ${Math.round(idle / 1000)} s`];
        return ["READY", `${this.#frames} frames`];
      }
    }
  }

  /** The latest frame, read from the file ffmpeg replaces atomically; bounded by the configured size. */
  snapshot(): Snapshot {
    if (!this.#supervisor || this.#supervisor.state === "STOPPED" || this.#supervisor.state === "FAILED")
      throw new SnapshotError(`camera ${this.config.name} is not running (start it first)`);
    const file = snapshotFileOf(this.#settings.stateDir, this.config.name);
    let size: number;
    let mtime: Date;
    try {
      ({ size, mtime } = statSync(file));
    } catch {
      throw new SnapshotError(`camera ${this.config.name} has produced no frame yet`);
    }
    if (size > this.#settings.snapshotMaxBytes)
      throw new SnapshotError(
        `the frame is ${size} bytes, more than the configured snapshot.maxBytes (${this.#settings.snapshotMaxBytes})`,
      );
    const jpeg = readFileSync(file);
    const info = jpeg.length <= this.#settings.snapshotMaxBytes ? jpegInfo(jpeg) : undefined;
    if (!info) throw new SnapshotError(`camera ${this.config.name}: the latest frame is not a complete JPEG`);
    return { jpeg, ...info, capturedAt: mtime.toISOString() };
  }
}
