// The hub's public sealing key for `rlark seal` and `rlark validate --hub-key`, its rotation, and
// re-sealing to the current key. The key's body is the current public key as PEM; the header
// lists every key id the hub still opens (current first), so a CI check accepts values sealed
// before a rotation. Re-sealing takes sealed values and answers sealed values: plain ones exist
// only in this process's memory, for the moment between opening and sealing again.
import type { IncomingMessage, ServerResponse } from "node:http";
import { sendJson, sendStatus } from "../../lib/http/index.ts";
import { parseSealed, type SealKeyring, sealValue, unboundSecretContext } from "../../lib/seal/index.ts";

export const SEAL_KEY_IDS_HEADER = "x-rlark-seal-key-ids";

type Keys = Pick<SealKeyring, "currentPublicKeyPem" | "keyIds" | "rotate" | "unseal">;

/** A repository's worth of values in one request, and no more. */
const MAX_RESEAL_BODY = 16 * 1024 * 1024;
const MAX_RESEAL_ITEMS = 10_000;

export function serveSealKey(keys: Keys, res: ServerResponse): void {
  res.writeHead(200, {
    "content-type": "application/x-pem-file",
    [SEAL_KEY_IDS_HEADER]: keys.keyIds().join(","),
  });
  res.end(keys.currentPublicKeyPem());
}

/** POST, admins only (its route in api-server.ts says so): a new current key; older seals keep opening. */
export async function serveSealKeyRotate(
  keys: Keys,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  // The request carries no body; whatever a client sent is not read.
  req.resume();
  const kid = await keys.rotate();
  return sendJson(res, 200, { keyId: kid, keyIds: keys.keyIds() });
}

/**
 * POST, admins only: `{items: [{sealed, context}]}` to `{items: [{sealed} | {error}]}`, each value
 * opened for its context and sealed again to the current key (`rlark seal --reseal`); a value that
 * already is answers unchanged. A SealedSecret value an older rlark sealed for the context that
 * named no cluster (`secret/<namespace>/<name>/<key>`) is sealed for `context`, which names its
 * clusters: such a value opened at any cluster, so binding it narrows where it goes.
 */
export async function serveReseal(keys: Keys, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readBody(req, MAX_RESEAL_BODY);
  if (body === undefined)
    return sendStatus(res, 413, "RequestEntityTooLarge", `body larger than ${MAX_RESEAL_BODY} bytes`);
  const items = parseItems(body);
  if (typeof items === "string") return sendStatus(res, 400, "BadRequest", items);
  const pem = keys.currentPublicKeyPem();
  const current = keys.keyIds()[0];
  const answers = items.map(({ sealed, context }) => {
    try {
      const plain = openForReseal(keys, sealed, context);
      if (plain.bound && parseSealed(sealed).kid === current) return { sealed };
      return { sealed: sealValue(plain.value, pem, context) };
    } catch (error) {
      return { error: (error as Error).message };
    }
  });
  return sendJson(res, 200, { keyId: keys.keyIds()[0], items: answers });
}

function openForReseal(keys: Keys, sealed: string, context: string): { value: Buffer; bound: boolean } {
  try {
    return { value: keys.unseal(sealed, context), bound: true };
  } catch (error) {
    const unbound = unboundSecretContext(context);
    if (unbound === undefined) throw error;
    try {
      return { value: keys.unseal(sealed, unbound), bound: false };
    } catch {
      throw error; // the reason for the context asked
    }
  }
}

function parseItems(body: Buffer): Array<{ sealed: string; context: string }> | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    return 'the body must be JSON: {"items": [{"sealed": …, "context": …}]}';
  }
  const items = (parsed as { items?: unknown } | null)?.items;
  if (!Array.isArray(items) || items.length > MAX_RESEAL_ITEMS)
    return `items must be a list of at most ${MAX_RESEAL_ITEMS} {sealed, context} objects`;
  const out: Array<{ sealed: string; context: string }> = [];
  for (const [i, item] of items.entries()) {
    const { sealed, context } = (item ?? {}) as { sealed?: unknown; context?: unknown };
    if (typeof sealed !== "string" || typeof context !== "string" || context === "")
      return `items[${i}] must be {sealed: string, context: non-empty string}`;
    out.push({ sealed, context });
  }
  return out;
}

/** The body, or undefined once it passes `max` bytes (the rest is not read). */
async function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) {
      req.destroy();
      return undefined;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
