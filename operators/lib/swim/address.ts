/** `ipv4:port`, or an error naming what it was given as (a flag, a field). */
export function parseGroupAddress(value: string, what: string): { host: string; port: number } {
  const match = /^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  if (!match || port > 65535 || match[1]?.split(".").some((o) => Number(o) > 255))
    throw new Error(`${what} ${JSON.stringify(value)} is not ipv4:port`);
  return { host: match[1] as string, port };
}
