// The hub's relay engine by default: `rlark-net relay` where the binary is found, the hub's own
// process (logged) where it is not, as after an npm install, which carries no Go binary.
import t from "tap";
import type { Logger } from "../../operators/lib/logger.ts";
import { goRelayOptions } from "../helpers/relay-engine.ts";
import { startRelayHub } from "../helpers/relay-hub.ts";

function recording(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const none = () => {};
  return { logger: { info: none, error: none, warn: (message) => warnings.push(message) }, warnings };
}

t.test("with rlark-net found and no engine asked for, the hub runs rlark-net relay", async (t) => {
  const { rlarkNet } = goRelayOptions();
  const saved = process.env.RLARK_NET_BIN;
  process.env.RLARK_NET_BIN = rlarkNet;
  t.teardown(() => {
    if (saved === undefined) delete process.env.RLARK_NET_BIN;
    else process.env.RLARK_NET_BIN = saved;
  });
  const { logger } = recording();
  const { hub } = await startRelayHub(t, "relay-default", {
    domainRelayEngine: undefined,
    rlarkNet: undefined,
    logger,
  });
  t.ok(hub.domainRelay?.goEngine()?.pid, "the Go engine is the default");
});

t.test("without rlark-net the relay's bytes stay in the hub's process, and it says so", async (t) => {
  const saved = process.env.RLARK_NET_BIN;
  process.env.RLARK_NET_BIN = "/nonexistent/rlark-net";
  t.teardown(() => {
    if (saved === undefined) delete process.env.RLARK_NET_BIN;
    else process.env.RLARK_NET_BIN = saved;
  });
  const { logger, warnings } = recording();
  const { hub } = await startRelayHub(t, "relay-fallback", {
    domainRelayEngine: undefined,
    rlarkNet: undefined,
    logger,
  });
  t.equal(hub.domainRelay?.goEngine(), undefined, "no Go engine");
  t.ok(hub.domainRelayAddress, "the relay listens all the same");
  t.ok(
    warnings.some((w) => w.includes("rlark-net not found")),
    "the hub logged that rlark-net was not found",
  );
});
