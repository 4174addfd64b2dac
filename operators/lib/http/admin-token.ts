import { randomBytes } from "node:crypto";
import { chmod, readFile, writeFile } from "node:fs/promises";
import path from "node:path";

export const ADMIN_TOKEN_FILE = "admin-token";

/** The hub's admin bearer token: made on first start (0600), read on every later one. */
export async function loadOrCreateAdminToken(dataDir: string): Promise<string> {
  const file = path.join(dataDir, ADMIN_TOKEN_FILE);
  try {
    const token = (await readFile(file, "utf8")).trim();
    if (token.length >= 32) return token;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const token = randomBytes(32).toString("base64url");
  await writeFile(file, `${token}\n`, { mode: 0o600, flag: "w" });
  await chmod(file, 0o600);
  return token;
}
