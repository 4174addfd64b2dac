import { readFile } from "node:fs/promises";

export interface LoadWebhookSecretsOptions {
  /** `--webhook-secret-file`: one secret per line; several lines while a secret rotates. */
  file?: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * The shared secrets push webhooks must be signed with: from the file when given, else from
 * `RLARK_WEBHOOK_SECRET` (newline-separated for rotation). An empty list means "refuse all webhooks".
 */
export async function loadWebhookSecrets(options: LoadWebhookSecretsOptions = {}): Promise<string[]> {
  const text = options.file
    ? await readFile(options.file, "utf8")
    : ((options.env ?? process.env).RLARK_WEBHOOK_SECRET ?? "");
  const secrets = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
  return [...new Set(secrets)];
}
