import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";

export const JWT_SECRET_FILE = "dashboard-jwt-secret";

/**
 * The key that signs dashboard sessions: made on first start (0600), kept across restarts so
 * sessions survive them. Deleting the file and restarting logs everyone out.
 */
export async function loadOrCreateJwtSecret(dataDir: string): Promise<Buffer> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, JWT_SECRET_FILE);
  try {
    const secret = Buffer.from((await readFile(file, "utf8")).trim(), "base64url");
    if (secret.length >= 32) return secret;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const secret = randomBytes(32);
  await writeFile(file, `${secret.toString("base64url")}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return secret;
}
