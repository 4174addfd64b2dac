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
