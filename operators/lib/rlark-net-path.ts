// Where the rlark-net helper is: $RLARK_NET_BIN, else the one hack/network/build-rlark-net put in
// ${RLARK_CACHE:-$HOME/.cache/rlark}/bin, else `rlark-net` on PATH (the image has it in /usr/local/bin).

import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export function rlarkNetPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.RLARK_NET_BIN) return env.RLARK_NET_BIN;
  const cached = join(env.RLARK_CACHE || join(env.HOME || homedir(), ".cache/rlark"), "bin", "rlark-net");
  return existsSync(cached) ? cached : "rlark-net";
}

/** rlarkNetPath() if that is a file there is (on PATH for the bare name), else undefined. */
export function findRlarkNet(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const found = rlarkNetPath(env);
  if (found !== "rlark-net") return existsSync(found) ? found : undefined;
  for (const dir of (env.PATH ?? "").split(":").filter(Boolean)) {
    const candidate = join(dir, "rlark-net");
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}
