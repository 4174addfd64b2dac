// Artifacts are fetched once into a content-addressed cache and trusted only after their bytes
// hash to the digest the Task names: the file is streamed to a temporary name while hashing and
// renamed into `<dir>/<sha256>/` only on a match, so nothing unverified is ever at a path that
// could be executed.
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, existsSync } from "node:fs";
import { chmod, mkdir, rename, rm } from "node:fs/promises";
import { basename, join } from "node:path";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import type { RawArtifact } from "../types.ts";

export type ArtifactFailure = "ArtifactChecksumMismatch" | "ArtifactDownloadFailed";

export class ArtifactError extends Error {
  readonly reason: ArtifactFailure;
  constructor(reason: ArtifactFailure, message: string) {
    super(message);
    this.name = "ArtifactError";
    this.reason = reason;
  }
}

export interface ArtifactCacheOptions {
  dir: string;
  /** Give up on a download after this long. */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** File name inside the cache entry: the URL's last path segment, so `./tool` can name it. */
export function artifactFileName(url: string): string {
  let name = "";
  try {
    name = basename(new URL(url).pathname);
  } catch {
    // An unparsable URL is caught by validation before it gets here.
  }
  return /^[A-Za-z0-9._-]+$/.test(name) && name !== "." && name !== ".." ? name : "artifact";
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash("sha256");
  await pipeline(createReadStream(path), hash);
  return hash.digest("hex");
}

export class ArtifactCache {
  readonly #dir: string;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #inFlight = new Map<string, Promise<string>>();
  /** Cache entries hashed by this process: an entry left by an earlier agent is checked once before use. */
  readonly #verified = new Set<string>();

  constructor(options: ArtifactCacheOptions) {
    this.#dir = options.dir;
    this.#timeoutMs = options.timeoutMs ?? 600_000;
    this.#fetch = options.fetch ?? fetch;
  }

  /** The cached file's path, downloading and verifying it first when needed. */
  get(artifact: RawArtifact): Promise<string> {
    const digest = artifact.sha256.toLowerCase();
    const target = join(this.#dir, digest, artifactFileName(artifact.url));
    if (this.#verified.has(target)) return Promise.resolve(target);
    const key = `${digest} ${target}`;
    let pending = this.#inFlight.get(key);
    if (!pending) {
      pending = this.#fetchOnce(artifact.url, digest, target)
        .then((path) => {
          this.#verified.add(path);
          return path;
        })
        .finally(() => this.#inFlight.delete(key));
      this.#inFlight.set(key, pending);
    }
    return pending;
  }

  async #fetchOnce(url: string, digest: string, target: string): Promise<string> {
    if (existsSync(target)) {
      if ((await sha256Of(target)) === digest) return target;
      // Changed on disk since it was verified (tampering or a torn disk): fetch it afresh.
      await rm(target, { force: true });
    }
    return this.#download(url, digest, target);
  }

  async #download(url: string, digest: string, target: string): Promise<string> {
    const entry = join(this.#dir, digest);
    await mkdir(entry, { recursive: true });
    const partial = join(this.#dir, `.partial-${randomBytes(6).toString("hex")}`);
    const hash = createHash("sha256");
    try {
      const source = await this.#open(url);
      const hashing = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          hash.update(chunk);
          callback(null, chunk);
        },
      });
      await pipeline(source, hashing, createWriteStream(partial, { mode: 0o600 }), {
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (error) {
      await rm(partial, { force: true });
      if (error instanceof ArtifactError) throw error;
      throw new ArtifactError("ArtifactDownloadFailed", `downloading ${url}: ${(error as Error).message}`);
    }
    // The actual digest is never reported: it would tell whoever reads the status a hash of
    // any file the URL can reach.
    if (hash.digest("hex") !== digest) {
      await rm(partial, { force: true });
      throw new ArtifactError(
        "ArtifactChecksumMismatch",
        `artifact ${url} does not match the declared sha256; it was not executed`,
      );
    }
    await chmod(partial, 0o755);
    await rename(partial, target);
    return target;
  }

  async #open(url: string): Promise<Readable> {
    if (url.startsWith("file:")) return createReadStream(fileURLToPath(url));
    const response = await this.#fetch(url, {
      signal: AbortSignal.timeout(this.#timeoutMs),
      redirect: "follow",
    });
    if (!response.ok || !response.body) {
      throw new ArtifactError("ArtifactDownloadFailed", `downloading ${url}: HTTP ${response.status}`);
    }
    return Readable.fromWeb(response.body);
  }
}
