// Where a Raw task's artifact comes from, by the text of its url alone. One rule for
// `rlark validate` (a finding at the field), the hub and the plan (which then read the file, see
// operators/source/repository-artifacts.ts) and the agent's schemes, so no check is greener than
// the hub.

export type ArtifactSource =
  /** Fetched by the agent. */
  | { kind: "remote" }
  /** A file of the repository; `path` is relative to the manifest folder, `/`-separated, without `.`. */
  | { kind: "repository"; path: string }
  | { kind: "invalid"; reason: string };

const SCHEME = /^[a-z][a-z0-9+.-]*:/i;
/** The schemes the agents fetch (operators/agent/runtimes/process/artifact-cache.ts). */
const FETCHED = /^(https?|file):/;
// C0, DEL and C1: never part of a file name anyone means to write.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

export function artifactSource(url: string): ArtifactSource {
  if (SCHEME.test(url)) {
    return FETCHED.test(url)
      ? { kind: "remote" }
      : { kind: "invalid", reason: "has a scheme the agents do not fetch; use https://, http:// or file://" };
  }
  const invalid = (why: string): ArtifactSource => ({
    kind: "invalid",
    reason: `${why}; name a file by its path inside the manifest folder (scripts/run.sh) or give a URL`,
  });
  if (CONTROL.test(url)) return invalid("contains a control character");
  if (url.startsWith("/")) return invalid("is an absolute path");
  if (url.includes("\\")) return invalid("contains a backslash");
  const segments = url.split("/");
  if (segments.includes("..")) return invalid('contains "..", which could leave the manifest folder');
  const kept = segments.filter((s) => s !== "" && s !== ".");
  if (kept.length === 0 || segments.at(-1) === "" || segments.at(-1) === ".")
    return invalid("names a folder");
  return { kind: "repository", path: kept.join("/") };
}
