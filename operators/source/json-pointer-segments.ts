import { unescapePointerToken } from "../api/index.ts";

/** Decodes a JSON pointer (RFC 6901) into its segments: "/a~1b/0" → ["a/b", "0"]. */
export function pointerSegments(pointer: string): string[] {
  return pointer === "" ? [] : pointer.slice(1).split("/").map(unescapePointerToken);
}
