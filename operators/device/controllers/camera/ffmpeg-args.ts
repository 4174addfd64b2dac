// The ffmpeg command line of a camera: pure, so every source and output is checked without a
// camera. One ffmpeg reads the source once (a V4L2 device cannot be opened twice) and writes two
// outputs: the transcoded stream, and the latest frame as a JPEG that snapshots read. The frame is
// written atomically (-atomic_writing), so a snapshot never reads half a file; progress goes to
// stdout (-progress pipe:1), where the controller counts frames for its health.
import path from "node:path";
import type { CameraConfig, CameraSource } from "./config.ts";

export const FFMPEG = "ffmpeg";

export interface FfmpegPlan {
  argv: string[];
  /** The JPEG the second output keeps replacing. */
  snapshotFile: string;
}

export function snapshotFileOf(stateDir: string, camera: string): string {
  return path.join(stateDir, `${camera}.jpg`);
}

export function ffmpegArgs(
  camera: CameraConfig,
  options: { stateDir: string; snapshotFps: number },
): FfmpegPlan {
  const snapshotFile = snapshotFileOf(options.stateDir, camera.name);
  const argv = [
    FFMPEG,
    "-hide_banner",
    "-nostdin",
    "-nostats",
    "-loglevel",
    "warning",
    "-progress",
    "pipe:1",
    "-stats_period",
    "1",
    ...inputArgs(camera.source),
    ...streamOutputArgs(camera),
    "-map",
    "0:v:0",
    "-vf",
    `fps=${options.snapshotFps}`,
    "-q:v",
    "5",
    "-f",
    "image2",
    "-update",
    "1",
    "-atomic_writing",
    "1",
    "-y",
    snapshotFile,
  ];
  return { argv, snapshotFile };
}

function inputArgs(source: CameraSource): string[] {
  switch (source.type) {
    case "v4l2":
      return [
        "-f",
        "v4l2",
        ...(source.inputFormat ? ["-input_format", source.inputFormat] : []),
        ...(source.width && source.height ? ["-video_size", `${source.width}x${source.height}`] : []),
        ...(source.fps ? ["-framerate", String(source.fps)] : []),
        "-i",
        source.device,
      ];
    case "rtsp":
      // -timeout (microseconds): a camera that stops sending ends ffmpeg, and the restart reconnects.
      return ["-rtsp_transport", source.transport, "-timeout", "5000000", "-i", source.url];
    case "udp":
      return ["-timeout", "5000000", "-i", source.url];
    case "file":
      // -re: a file plays at its own rate, as a camera would, not as fast as ffmpeg can read it.
      return ["-re", ...(source.loop ? ["-stream_loop", "-1"] : []), "-i", source.path];
    case "testsrc":
      return ["-re", "-f", "lavfi", "-i", `testsrc=size=${source.width}x${source.height}:rate=${source.fps}`];
    case "realsense":
      throw new Error("a RealSense camera has no ffmpeg input");
  }
}

function streamOutputArgs(camera: CameraConfig): string[] {
  const output = camera.output;
  if (output.type === "none") return [];
  const filters = [
    ...(camera.width || camera.height ? [`scale=${camera.width ?? -2}:${camera.height ?? -2}`] : []),
    ...(camera.fps ? [`fps=${camera.fps}`] : []),
  ];
  const video =
    camera.codec === "copy"
      ? ["-c:v", "copy"]
      : [
          ...(filters.length ? ["-vf", filters.join(",")] : []),
          "-c:v",
          "libx264",
          "-preset",
          "veryfast",
          "-tune",
          "zerolatency",
          "-pix_fmt",
          "yuv420p",
          "-b:v",
          `${camera.bitrateKbps}k`,
          "-g",
          String(2 * (camera.fps ?? 25)),
        ];
  const mapped = ["-map", "0:v:0", "-an", ...video];
  switch (output.type) {
    case "udp":
      return [...mapped, "-f", "mpegts", output.url];
    case "rtsp":
      return [...mapped, "-f", "rtsp", "-rtsp_transport", "tcp", output.url];
    case "hls":
      // A sliding window of segments: the directory never grows past `segments` files.
      return [
        ...mapped,
        "-f",
        "hls",
        "-hls_time",
        String(output.segmentSeconds),
        "-hls_list_size",
        String(output.segments),
        "-hls_flags",
        "delete_segments",
        path.join(output.dir, "index.m3u8"),
      ];
  }
}

/** A URL as status shows it: without user and password. */
export function redactUrl(value: string): string {
  try {
    const url = new URL(value);
    if (!url.username && !url.password) return value;
    url.username = "";
    url.password = "";
    return url.toString();
  } catch {
    return value;
  }
}
