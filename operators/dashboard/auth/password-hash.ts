// Dashboard passwords as crypt-style strings in git (User spec.passwordHash), never in plain text:
//
//   $scrypt$ln=<log2 N>,r=<block size>,p=<parallelism>$<salt, base64>$<key, base64>
//
// the PHC string format for scrypt (base64 without padding; url-safe letters are accepted too).
// `rlark user hash-password` prints one. Only scrypt is verified: node:crypto has it built in,
// and a hash in another scheme ($2b$ bcrypt, ...) is refused rather than guessed at.
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto";

export interface ScryptParameters {
  /** log2 of the CPU/memory cost N. */
  ln: number;
  r: number;
  p: number;
}

export const DEFAULT_SCRYPT: ScryptParameters = { ln: 15, r: 8, p: 1 };
const KEY_LENGTH = 32;
// Refuse parameters from git that would let one login pin a core or exhaust memory.
const MAX_LN = 20;
const MAX_R = 16;
const MAX_P = 4;

interface ParsedHash {
  parameters: ScryptParameters;
  salt: Buffer;
  key: Buffer;
}

export function parsePasswordHash(hash: string): ParsedHash | undefined {
  const match =
    /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/_-]+)\$([A-Za-z0-9+/_-]+)$/.exec(hash);
  if (!match) return undefined;
  const parameters = { ln: Number(match[1]), r: Number(match[2]), p: Number(match[3]) };
  if (parameters.ln < 1 || parameters.ln > MAX_LN || parameters.r < 1 || parameters.r > MAX_R)
    return undefined;
  if (parameters.p < 1 || parameters.p > MAX_P) return undefined;
  const salt = Buffer.from(match[4]!, "base64");
  const key = Buffer.from(match[5]!, "base64");
  if (salt.length < 8 || key.length < 16) return undefined;
  return { parameters, salt, key };
}

function derive(password: string, salt: Buffer, length: number, p: ScryptParameters): Promise<Buffer> {
  const N = 2 ** p.ln;
  return new Promise((resolve, reject) => {
    scrypt(
      password,
      salt,
      length,
      { N, r: p.r, p: p.p, maxmem: 256 * N * p.r + 1024 * 1024 },
      (error, key) => (error ? reject(error) : resolve(key)),
    );
  });
}

export async function hashPassword(password: string, parameters = DEFAULT_SCRYPT): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, KEY_LENGTH, parameters);
  const b64 = (b: Buffer) => b.toString("base64").replace(/=+$/, "");
  return `$scrypt$ln=${parameters.ln},r=${parameters.r},p=${parameters.p}$${b64(salt)}$${b64(key)}`;
}

/** False for a wrong password and for a hash this hub cannot verify. */
export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  const parsed = parsePasswordHash(hash);
  if (!parsed) return false;
  const key = await derive(password, parsed.salt, parsed.key.length, parsed.parameters);
  return timingSafeEqual(key, parsed.key);
}

// Verifying against this when the user does not exist keeps the answer's timing from telling
// which login names exist.
let dummy: Promise<string> | undefined;
export function dummyPasswordHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(16).toString("hex"));
  return dummy;
}
