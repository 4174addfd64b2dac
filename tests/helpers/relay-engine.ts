// The hub options that pick the Domain relay's engine for a test run: RLARK_TEST_RELAY_ENGINE=go
// runs the relay tests' hubs on `rlark-net relay` (built by hack/network/build-rlark-net), so the
// same files and assertions cover both engines; unset, the hub's default (node).
import { execFileSync } from "node:child_process";
import path from "node:path";
import type { HubOptions } from "../../operators/hub/index.ts";

const root = path.resolve(import.meta.dirname, "../..");

export function goRelayOptions(): Pick<HubOptions, "domainRelayEngine" | "rlarkNet"> {
  const rlarkNet = execFileSync(path.join(root, "hack/network/build-rlark-net"), { encoding: "utf8" }).trim();
  return { domainRelayEngine: "go", rlarkNet };
}

export function relayEngineOptions(): Pick<HubOptions, "domainRelayEngine" | "rlarkNet"> {
  return process.env.RLARK_TEST_RELAY_ENGINE === "go" ? goRelayOptions() : {};
}
