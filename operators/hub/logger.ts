import type { Logger } from "../lib/controller/index.ts";

/** One JSON object per line on stderr: what operators grep and log shippers parse. */
export function jsonLogger(component: string, stream: NodeJS.WritableStream = process.stderr): Logger {
  const write = (level: string) => (message: string, fields?: Record<string, unknown>) => {
    stream.write(
      `${JSON.stringify({ time: new Date().toISOString(), level, component, message, ...fields })}\n`,
    );
  };
  return { info: write("info"), warn: write("warn"), error: write("error") };
}
