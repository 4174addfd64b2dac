// The hub options that pick the Domain relay's engine for a test run: the hub's default, `rlark-net
// relay` (built here by hack/network/build-rlark-net), or with RLARK_TEST_RELAY_ENGINE=node the
// fallback in the hub's own process, so the same files and assertions cover both engines.
import { execFileSync } from "node:child_process";
import path from "node:path";
import type { HubOptions } from "../../operators/hub/index.ts";

const root = path.resolve(import.meta.dirname, "../..");

export function goRelayOptions(): Pick<HubOptions, "domainRelayEngine" | "rlarkNet"> {
  const rlarkNet = execFileSync(path.join(root, "hack/network/build-rlark-net"), { encoding: "utf8" }).trim();
  return { domainRelayEngine: "go", rlarkNet };
}

export function relayEngineOptions(): Pick<HubOptions, "domainRelayEngine" | "rlarkNet"> {
  return process.env.RLARK_TEST_RELAY_ENGINE === "node" ? { domainRelayEngine: "node" } : goRelayOptions();
}
