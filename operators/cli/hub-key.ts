// Where `rlark seal` and `rlark validate --hub-key` get the hub's public sealing key: a PEM file
// (`rlark seal-key show > hub-seal.pem`, committed or kept in CI) or the hub's URL, asked at
// /api/v1/seal-key with a token as other commands take it.
import { open } from "node:fs/promises";
import { publicKeyPemId, type SealError, x25519PublicKey } from "../lib/seal/index.ts";
import { usageError } from "./cli-error.ts";
import { callHub, resolveToken, type TokenFlags } from "./hub-token.ts";

export interface HubKeyFlags extends TokenFlags {
  hubKey: string;
}

export interface HubKey {
  pem: string;
  /** Every key id the hub opens, current (the PEM's) first. */
  keyIds: string[];
}

/** A PEM public key is well under 1 KiB; anything this large is not one. */
const MAX_KEY_BYTES = 16 * 1024;

export const isHubUrl = (value: string): boolean => /^https?:\/\//i.test(value);

export async function loadHubKey(flags: HubKeyFlags): Promise<HubKey> {
  const source = flags.hubKey;
  const { pem, keyIds } = isHubUrl(source)
    ? await fetchHubKey(source, await resolveToken(flags))
    : { pem: await readBounded(source), keyIds: [] };
  let current: string;
  try {
    x25519PublicKey(pem);
    current = publicKeyPemId(pem);
  } catch (error) {
    throw usageError(`--hub-key ${source}: ${(error as SealError).message}`);
  }
  return { pem, keyIds: [current, ...keyIds.filter((kid) => kid !== current)] };
}

async function readBounded(file: string): Promise<string> {
  const handle = await open(file, "r").catch((error: NodeJS.ErrnoException) => {
    throw usageError(`--hub-key ${file}: cannot be read (${error.code ?? error.message})`);
  });
  try {
    const buffer = Buffer.alloc(MAX_KEY_BYTES + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    if (bytesRead > MAX_KEY_BYTES) throw usageError(`--hub-key ${file}: larger than a public key`);
    return buffer.subarray(0, bytesRead).toString("utf8");
  } finally {
    await handle.close();
  }
}

async function fetchHubKey(hub: string, token: string): Promise<HubKey> {
  const url = new URL("/api/v1/seal-key", hub);
  const response = await callHub("GET", url, token);
  const body = await boundedBody(response, MAX_KEY_BYTES);
  if (!body) throw usageError(`GET ${url.pathname}: larger than a public key`);
  const keyIds = (response.headers.get("x-rlark-seal-key-ids") ?? "")
    .split(",")
    .filter((kid) => /^[0-9a-f]{16}$/.test(kid));
  return { pem: body.toString("utf8"), keyIds };
}

/** The body, or undefined once it passes `max` bytes (the rest is not read). */
async function boundedBody(response: Response, max: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += chunk.length;
    // Leaving the loop cancels the stream: the rest is never read.
    if (size > max) return undefined;
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}
