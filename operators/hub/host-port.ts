/** `host:port` or `[v6]:port`; an empty host is 127.0.0.1. */
export function splitHostPort(value: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(value);
  if (!match) throw new Error(`expected host:port, got "${value}"`);
  return { host: match[1] ?? match[2] ?? "127.0.0.1", port: Number(match[3]) };
}
