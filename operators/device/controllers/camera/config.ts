// The camera controller's configuration file: the node's cameras, each a source, a transcoding
// and an output. Only the node's operator writes it; clients of the socket name a camera.
import { ConfigSource, Fields, type RestartPolicy, readRestartPolicy } from "../config-file.ts";

export type CameraSource =
  | { type: "v4l2"; device: string; inputFormat?: string; width?: number; height?: number; fps?: number }
  | { type: "rtsp"; url: string; transport: "tcp" | "udp" }
  | { type: "udp"; url: string }
  | { type: "file"; path: string; loop: boolean }
  | { type: "testsrc"; width: number; height: number; fps: number }
  | { type: "realsense"; serial?: string };

export type CameraOutput =
  | { type: "udp"; url: string }
  | { type: "rtsp"; url: string }
  | { type: "hls"; dir: string; segmentSeconds: number; segments: number }
  | { type: "none" };

export interface CameraConfig {
  name: string;
  source: CameraSource;
  output: CameraOutput;
  /** h264 re-encodes (libx264, low latency); copy passes an H.264 source through. */
  codec: "h264" | "copy";
  width?: number;
  height?: number;
  fps?: number;
  bitrateKbps: number;
  autostart: boolean;
}

export interface CameraControllerConfig {
  cameras: CameraConfig[];
  /** Where each camera's latest frame is kept for snapshots. */
  stateDir: string;
  snapshotFps: number;
  snapshotMaxBytes: number;
  /** A running camera with no new frame for this long is DEGRADED. */
  stallMs: number;
  restart: RestartPolicy;
}

const NAME = /^[a-z0-9]([a-z0-9-]{0,40}[a-z0-9])?$/;
const SOURCE_TYPES = ["v4l2", "rtsp", "udp", "file", "testsrc", "realsense"] as const;
const OUTPUT_TYPES = ["udp", "rtsp", "hls", "none"] as const;

export const DEFAULT_STATE_DIR = "/var/run/rlark/camera";

/** `overrides.stateDir` (the --state-dir flag) wins over the file's stateDir. */
export function readCameraConfig(
  file: string,
  overrides: { stateDir?: string } = {},
): CameraControllerConfig {
  return parseCameraConfig(ConfigSource.read(file), overrides);
}

export function parseCameraConfig(
  source: ConfigSource,
  overrides: { stateDir?: string } = {},
): CameraControllerConfig {
  const top = new Fields(source, [], source.root, [
    "cameras",
    "stateDir",
    "snapshot",
    "stallSeconds",
    "restart",
  ]);
  const snapshot = top.nested("snapshot", ["fps", "maxBytes"]);
  const cameras = top
    .list("cameras")
    .map((value, i) => readCamera(new Fields(source, ["cameras", i], value, CAMERA_FIELDS)));
  const seen = new Set<string>();
  cameras.forEach((camera, i) => {
    if (seen.has(camera.name))
      throw source.error(["cameras", i, "name"], `camera "${camera.name}" is configured twice`);
    seen.add(camera.name);
  });
  return {
    cameras,
    stateDir: overrides.stateDir ?? top.string("stateDir", DEFAULT_STATE_DIR),
    snapshotFps: snapshot.number("fps", 1, 0.1, 30),
    snapshotMaxBytes: snapshot.number("maxBytes", 4 * 1024 * 1024, 1024, 16 * 1024 * 1024),
    stallMs: top.number("stallSeconds", 10, 1, 3600) * 1000,
    restart: readRestartPolicy(top),
  };
}

const CAMERA_FIELDS = [
  "name",
  "source",
  "output",
  "codec",
  "width",
  "height",
  "fps",
  "bitrateKbps",
  "autostart",
];

function readCamera(f: Fields): CameraConfig {
  const name = f.string("name");
  if (!NAME.test(name)) throw f.fail("name", "must be lowercase letters, digits and '-' (at most 42)");
  const codec = f.oneOf("codec", ["h264", "copy"] as const, "h264");
  const width = f.optionalNumber("width", 16, 7680);
  const height = f.optionalNumber("height", 16, 4320);
  const fps = f.optionalNumber("fps", 1, 240);
  if (codec === "copy" && (width || height || fps))
    throw f.fail("codec", "copy passes the stream through: width, height and fps need h264");
  return {
    name,
    source: readSource(f),
    output: readOutput(f),
    codec,
    ...(width ? { width } : {}),
    ...(height ? { height } : {}),
    ...(fps ? { fps } : {}),
    bitrateKbps: f.number("bitrateKbps", 2000, 50, 100_000),
    autostart: f.boolean("autostart", false),
  };
}

function url(f: Fields, key: string, schemes: readonly string[]): string {
  const value = f.string(key);
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw f.fail(key, "is not a URL");
  }
  if (!schemes.includes(parsed.protocol.replace(/:$/, "")))
    throw f.fail(key, `must be a ${schemes.join(" or ")} URL`);
  return value;
}

function readSource(camera: Fields): CameraSource {
  if (!camera.has("source")) throw camera.fail("source", "is required");
  // First any known field, to name the type; then only the fields of that type.
  const all = camera.nested("source", [
    "type",
    "device",
    "inputFormat",
    "width",
    "height",
    "fps",
    "url",
    "transport",
    "path",
    "loop",
    "serial",
  ]);
  const pick = (allowed: string[]) => camera.nested("source", ["type", ...allowed]);
  switch (all.oneOf("type", SOURCE_TYPES)) {
    case "v4l2": {
      const f = pick(["device", "inputFormat", "width", "height", "fps"]);
      const device = f.string("device");
      if (!/^\/dev\/video\d+$/.test(device)) throw f.fail("device", "must be a /dev/videoN device");
      const inputFormat = f.optionalString("inputFormat");
      const width = f.optionalNumber("width", 16, 7680);
      const height = f.optionalNumber("height", 16, 4320);
      const fps = f.optionalNumber("fps", 1, 240);
      return {
        type: "v4l2",
        device,
        ...(inputFormat ? { inputFormat } : {}),
        ...(width ? { width } : {}),
        ...(height ? { height } : {}),
        ...(fps ? { fps } : {}),
      };
    }
    case "rtsp": {
      const f = pick(["url", "transport"]);
      return {
        type: "rtsp",
        url: url(f, "url", ["rtsp", "rtsps"]),
        transport: f.oneOf("transport", ["tcp", "udp"] as const, "tcp"),
      };
    }
    case "udp":
      return { type: "udp", url: url(pick(["url"]), "url", ["udp"]) };
    case "file": {
      const f = pick(["path", "loop"]);
      return { type: "file", path: f.string("path"), loop: f.boolean("loop", true) };
    }
    case "testsrc": {
      const f = pick(["width", "height", "fps"]);
      return {
        type: "testsrc",
        width: f.number("width", 640, 16, 7680),
        height: f.number("height", 480, 16, 4320),
        fps: f.number("fps", 25, 1, 240),
      };
    }
    case "realsense": {
      const serial = pick(["serial"]).optionalString("serial");
      return { type: "realsense", ...(serial ? { serial } : {}) };
    }
  }
}

function readOutput(camera: Fields): CameraOutput {
  const all = camera.nested("output", ["type", "url", "dir", "segmentSeconds", "segments"]);
  const type = all.oneOf("type", OUTPUT_TYPES, "none");
  const f = camera.nested(
    "output",
    {
      udp: ["type", "url"],
      rtsp: ["type", "url"],
      hls: ["type", "dir", "segmentSeconds", "segments"],
      none: ["type"],
    }[type],
  );
  if (type === "udp") return { type, url: url(f, "url", ["udp"]) };
  if (type === "rtsp") return { type, url: url(f, "url", ["rtsp", "rtsps"]) };
  if (type === "hls")
    return {
      type,
      dir: f.string("dir"),
      segmentSeconds: f.number("segmentSeconds", 2, 1, 60),
      segments: f.number("segments", 5, 2, 100),
    };
  return { type: "none" };
}
