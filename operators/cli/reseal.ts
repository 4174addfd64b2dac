// `rlark seal --reseal FILE...`: every SealedSecret value in the files is sent (sealed) to the hub
// with its context, and the hub seals again to its current key each value sealed to an older key
// or sealed by an older rlark for a context that named no cluster (answering the others as they
// are); the files are rewritten in place with comments and layout kept. Plain values never leave
// the hub.
import { readFile, writeFile } from "node:fs/promises";
import { type Document, parseAllDocuments } from "yaml";
import { sealedSecretContext } from "../api/index.ts";
import { parseSealed } from "../lib/seal/index.ts";
import { escapeControl } from "../lib/terminal-text.ts";
import { CliError, usageError } from "./cli-error.ts";
import { type HubKeyFlags, isHubUrl, loadHubKey } from "./hub-key.ts";
import { callHub, resolveToken } from "./hub-token.ts";

const MAX_FILE_BYTES = 8 * 1024 * 1024;

interface Pending {
  file: string;
  doc: Document;
  name: string;
  key: string;
  sealed: string;
  context: string;
}

export async function resealFiles(files: readonly string[], flags: HubKeyFlags): Promise<void> {
  if (!isHubUrl(flags.hubKey))
    throw usageError("--reseal needs --hub-key <hub url>: only the hub opens values");
  const { keyIds } = await loadHubKey(flags);
  const current = keyIds[0];
  const parsed = new Map<string, Document[]>();
  const pending: Pending[] = [];
  for (const file of files) {
    const text = await readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
      throw usageError(`--reseal ${file}: cannot be read (${error.code ?? error.message})`);
    });
    if (Buffer.byteLength(text) > MAX_FILE_BYTES) throw usageError(`--reseal ${file}: larger than 8 MiB`);
    const docs = parseAllDocuments(text);
    if (!Array.isArray(docs)) throw usageError(`--reseal ${file}: not YAML documents`);
    parsed.set(file, docs);
    for (const doc of docs) {
      if (doc.errors.length > 0) throw usageError(`--reseal ${file}: ${doc.errors[0]?.message}`);
      if (doc.get("kind") !== "SealedSecret") continue;
      const object = doc.toJS() as {
        metadata?: { name?: unknown; namespace?: unknown };
        spec?: { namespace?: unknown; clusterSelector?: unknown; encryptedData?: unknown };
      };
      const name = String(object.metadata?.name ?? "");
      const namespace = object.metadata?.namespace;
      const place = {
        metadata: { name, ...(typeof namespace === "string" ? { namespace } : {}) },
        spec: {
          namespace: String(object.spec?.namespace ?? ""),
          clusterSelector: object.spec?.clusterSelector,
        },
      };
      const data = object.spec?.encryptedData;
      for (const [key, sealed] of Object.entries(typeof data === "object" && data ? data : {})) {
        if (typeof sealed !== "string") continue;
        try {
          parseSealed(sealed);
        } catch {
          continue; // rlark validate names malformed values; nothing to re-seal here
        }
        pending.push({ file, doc, name, key, sealed, context: sealedSecretContext(place, key) });
      }
    }
  }
  const answers = pending.length > 0 ? await askHub(flags, pending) : [];
  const failures: string[] = [];
  const changed = new Map<string, number>();
  pending.forEach((item, i) => {
    const answer = answers[i];
    if (answer?.sealed === item.sealed) return;
    if (answer?.sealed) {
      item.doc.setIn(["spec", "encryptedData", item.key], answer.sealed);
      changed.set(item.file, (changed.get(item.file) ?? 0) + 1);
    } else
      failures.push(
        `${item.file}: SealedSecret ${item.name} key ${item.key}: ${escapeControl(answer?.error ?? "no answer")}`,
      );
  });
  for (const [file, count] of changed) {
    await writeFile(file, (parsed.get(file) ?? []).map((doc) => doc.toString()).join(""));
    process.stderr.write(`${file}: ${count} value${count === 1 ? "" : "s"} sealed again to key ${current}\n`);
  }
  if (changed.size === 0 && failures.length === 0)
    process.stderr.write(`every value is sealed to the current key ${current} for its clusters\n`);
  if (failures.length > 0) throw new CliError(failures.join("\n"));
}

async function askHub(
  flags: HubKeyFlags,
  pending: Pending[],
): Promise<Array<{ sealed?: string; error?: string }>> {
  const token = await resolveToken(flags);
  const url = new URL("/api/v1/seal-key/reseal", flags.hubKey);
  const response = await callHub("POST", url, token, {
    items: pending.map(({ sealed, context }) => ({ sealed, context })),
  });
  const { items } = (await response.json()) as { items?: Array<{ sealed?: string; error?: string }> };
  if (!Array.isArray(items) || items.length !== pending.length)
    throw usageError(
      `POST ${url.pathname}: the hub answered ${items?.length ?? 0} values for ${pending.length}`,
    );
  return items;
}
