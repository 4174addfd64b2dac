import {
  createDecipheriv,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
} from "node:crypto";
import { chmod, mkdir, readdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { SealError } from "./errors.ts";
import { parseSealed } from "./sealed-text.ts";
import { contentKey, keyId, publicKeyFromRaw, rawPublicKey } from "./x25519.ts";

interface SealKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  publicKeyPem: string;
}

const CURRENT = "current";
const KEY_FILE = /^([0-9a-f]{16})\.key$/;

/** Tightens a mode where it can; a read-only mount (a Kubernetes Secret) is taken as it is. */
async function tighten(path: string, mode: number): Promise<void> {
  await chmod(path, mode).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "EROFS") throw error;
  });
}

async function writeAtomic(path: string, data: string, mode: number): Promise<void> {
  const tmp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  await writeFile(tmp, data, { mode });
  // The umask may have narrowed the mode or widened nothing; set it explicitly either way.
  await chmod(tmp, mode);
  await rename(tmp, path);
}

function keyFromPem(pem: string, file: string): SealKey {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch (err) {
    throw new SealError(`${file}: not a private key: ${(err as Error).message}`);
  }
  if (privateKey.asymmetricKeyType !== "x25519") throw new SealError(`${file}: not an X25519 key`);
  const publicKey = createPublicKey(privateKey);
  return {
    kid: keyId(publicKey),
    privateKey,
    publicKey,
    publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
  };
}

/**
 * The hub's sealing keys in one directory: `<kid>.key` (PKCS#8 PEM, 0600) per key and `current`
 * naming the key new values are sealed to. Keys are never deleted by rotation, so every value
 * sealed to an older key still opens.
 */
export class SealKeyring {
  readonly #dir: string;
  readonly #keys = new Map<string, SealKey>();
  #current: SealKey;

  private constructor(dir: string, keys: SealKey[], current: SealKey) {
    this.#dir = dir;
    for (const key of keys) this.#keys.set(key.kid, key);
    this.#current = current;
  }

  /** Opens (or creates, 0700) the directory and loads every key; creates the first key if none. */
  static async open(dir: string): Promise<SealKeyring> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await tighten(dir, 0o700);
    const keys: SealKey[] = [];
    for (const name of (await readdir(dir)).sort()) {
      const match = KEY_FILE.exec(name);
      if (!match) continue;
      const path = join(dir, name);
      const key = keyFromPem(await readFile(path, "utf8"), path);
      if (key.kid !== match[1])
        throw new SealError(`${path}: holds key ${key.kid}, not the key its name says`);
      await tighten(path, 0o600);
      keys.push(key);
    }
    const currentKid = await readFile(join(dir, CURRENT), "utf8").then(
      (text) => text.trim(),
      (err: NodeJS.ErrnoException) => {
        if (err.code === "ENOENT") return undefined;
        throw err;
      },
    );
    const current = keys.find((key) => key.kid === currentKid);
    if (currentKid !== undefined && !current) {
      throw new SealError(
        `${join(dir, CURRENT)} names key ${currentKid}, but ${dir} has no ${currentKid}.key`,
      );
    }
    const ring = new SealKeyring(dir, keys, current ?? (keys[0] as SealKey));
    // No `current` yet: a new directory, or a first start that stopped between the two writes.
    if (!current) await ring.rotate();
    return ring;
  }

  currentPublicKeyPem(): string {
    return this.#current.publicKeyPem;
  }

  currentKeyId(): string {
    return this.#current.kid;
  }

  /** Every key id this keyring opens, current first; what `rlark validate --hub-key` checks against. */
  keyIds(): string[] {
    return [this.#current.kid, ...[...this.#keys.keys()].filter((kid) => kid !== this.#current.kid)];
  }

  /** Opens a sealed value sealed for `context`; a SealError names the reason, never the value. */
  unseal(sealed: string, context: string): Buffer {
    const parts = parseSealed(sealed);
    const key = this.#keys.get(parts.kid);
    if (!key) throw new SealError(`sealed to key ${parts.kid}, which this hub does not hold`);
    const ephemeral = publicKeyFromRaw(parts.ephemeralPublicKey);
    const aesKey = contentKey(
      key.privateKey,
      ephemeral,
      parts.ephemeralPublicKey,
      rawPublicKey(key.publicKey),
      context,
    );
    try {
      const decipher = createDecipheriv("aes-256-gcm", aesKey, parts.iv);
      decipher.setAAD(Buffer.from(context, "utf8"));
      decipher.setAuthTag(parts.tag);
      return Buffer.concat([decipher.update(parts.ciphertext), decipher.final()]);
    } catch {
      throw new SealError(
        `sealed value does not open for "${context}" (sealed for another place, or altered)`,
      );
    }
  }

  /** Makes a new current key; the old ones stay on disk and in memory to open what was sealed to them. */
  async rotate(): Promise<string> {
    const { privateKey } = generateKeyPairSync("x25519");
    const key = keyFromPem(privateKey.export({ type: "pkcs8", format: "pem" }).toString(), "new key");
    // The key file lands before `current` names it, so a crash in between leaves the old key current.
    await writeAtomic(
      join(this.#dir, `${key.kid}.key`),
      key.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
      0o600,
    );
    await writeAtomic(join(this.#dir, CURRENT), `${key.kid}\n`, 0o600);
    this.#keys.set(key.kid, key);
    this.#current = key;
    return key.kid;
  }
}
