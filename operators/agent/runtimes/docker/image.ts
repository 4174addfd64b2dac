// An image on the engine: inspected first, pulled only when missing (what `docker run` does, and
// what a container start and the image pre-pull both need). The engine's own message on failure.
import type { Readable } from "node:stream";
import type Docker from "dockerode";

const statusCode = (error: unknown): number | undefined => (error as { statusCode?: number }).statusCode;

/** Resolves once the engine holds `image`; rejects with why not. Aborting stops waiting for the pull. */
export async function ensureImage(client: Docker, image: string, signal?: AbortSignal): Promise<void> {
  try {
    await client.getImage(image).inspect();
    return;
  } catch (error) {
    if (statusCode(error) !== 404) throw error;
  }
  const stream = (await client.pull(image)) as Readable;
  await new Promise<void>((resolve, reject) => {
    const aborted = () => {
      stream.destroy();
      reject(new Error("no longer wanted"));
    };
    if (signal?.aborted) return aborted();
    signal?.addEventListener("abort", aborted, { once: true });
    client.modem.followProgress(stream, (error: Error | null, events: { error?: string }[]) => {
      signal?.removeEventListener("abort", aborted);
      const failed = events?.find((e) => e.error);
      if (error || failed) reject(error ?? new Error(failed?.error));
      else resolve();
    });
  });
}
