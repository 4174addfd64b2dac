// How CLI commands that talk to a running hub find their bearer token, call it, and read its errors.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { escapeControl } from "../lib/terminal-text.ts";
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

/**
 * `method url` on the hub with `token`: its answer when it is 2xx; otherwise a usage error naming
 * the request and the hub's message, or why the hub could not be reached.
 */
export async function callHub(
  method: "GET" | "POST",
  url: URL,
  token: string,
  json?: unknown,
): Promise<Response> {
  const response = await fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(json === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  }).catch((error: unknown) => {
    const cause = (error as { cause?: unknown }).cause;
    throw usageError(`cannot reach ${url.origin}: ${cause instanceof Error ? cause.message : String(error)}`);
  });
  if (!response.ok)
    throw usageError(
      `${method} ${url.pathname}: HTTP ${response.status} ${escapeControl(await errorMessage(response))}`,
    );
  return response;
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
