// How CLI commands that talk to a running hub find their bearer token, and read its errors.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { usageError } from "./cli-error.ts";

export interface TokenFlags {
  dataDir: string;
  token?: string;
  tokenFile?: string;
}

/** The hub's Status message, or the start of a body that is not one (a proxy's page). */
export async function errorMessage(response: Response): Promise<string> {
  const text = await response.text();
  try {
    const message = (JSON.parse(text) as { message?: unknown }).message;
    if (typeof message === "string") return message;
  } catch {
    // not JSON
  }
  return text.slice(0, 200).replace(/\s+/g, " ").trim();
}

export async function resolveToken(flags: TokenFlags): Promise<string> {
  if (flags.token) return flags.token;
  if (process.env.RLARK_TOKEN) return process.env.RLARK_TOKEN;
  if (flags.tokenFile) {
    const token = await readToken(flags.tokenFile);
    if (!token) throw usageError(`--token-file ${flags.tokenFile} cannot be read or is empty`);
    return token;
  }
  const file = path.join(flags.dataDir, "admin-token");
  const token = await readToken(file);
  if (!token)
    throw usageError(
      `no token: pass --token or --token-file, set RLARK_TOKEN, or point --data-dir at the data directory of the hub (it holds admin-token; found none at ${file})`,
    );
  return token;
}

async function readToken(file: string): Promise<string | undefined> {
  return (await readFile(file, "utf8").catch(() => "")).trim() || undefined;
}
