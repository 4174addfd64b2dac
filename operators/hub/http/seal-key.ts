// The hub's public sealing key for `rlark seal` and `rlark validate --hub-key`, and its rotation.
// The body is the current public key as PEM; the header lists every key id the hub still opens
// (current first), so a CI check accepts values sealed before a rotation.
import type { IncomingMessage, ServerResponse } from "node:http";
import { type Principal, sendJson, sendStatus } from "../../lib/http/index.ts";
import type { SealKeyring } from "../../lib/seal/index.ts";

export const SEAL_KEY_IDS_HEADER = "x-rlark-seal-key-ids";

type Keys = Pick<SealKeyring, "currentPublicKeyPem" | "keyIds" | "rotate">;

export function serveSealKey(keys: Keys, res: ServerResponse): void {
  res.writeHead(200, {
    "content-type": "application/x-pem-file",
    [SEAL_KEY_IDS_HEADER]: keys.keyIds().join(","),
  });
  res.end(keys.currentPublicKeyPem());
}

/** POST, admins only: a new current key; values sealed to older keys keep opening. */
export async function serveSealKeyRotate(
  keys: Keys,
  principal: Principal,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (req.method !== "POST") {
    res.setHeader("Allow", "POST");
    return sendStatus(res, 405, "MethodNotAllowed", "rotate the sealing key with POST");
  }
  if (principal.role !== "admin")
    return sendStatus(res, 403, "Forbidden", "rotating the sealing key is for admins");
  // The request carries no body; whatever a client sent is not read.
  req.resume();
  const kid = await keys.rotate();
  return sendJson(res, 200, { keyId: kid, keyIds: keys.keyIds() });
}
