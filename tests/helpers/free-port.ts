// A TCP port for a test's server to listen on, chosen before the server starts. Not listen(0):
// the kernel hands those out from its ephemeral range, where every outgoing connection on the
// machine takes its source port too, so between the choice and the bind another connection could
// take it (a pod's server once found its port taken in a whole run). These come from below the
// ephemeral range and below the hack/kube fleets' ports (hack/kube/fleet.ts takes the 12,000 just
// under it), each claimed for this process, so two test files never pick the same.
import { createServer } from "node:net";
import { claimNumber } from "./claim-number.ts";

const LOW = 8_000;
const HIGH = 20_000;

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A TCP port on 127.0.0.1, free now and claimed by no other test process. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 500; tries++) {
    // A port something else holds stays claimed, so the next pick skips it.
    const { value } = claimNumber("tcp-port", LOW, HIGH);
    if (await bindable(value)) return value;
  }
  throw new Error(`no free TCP port from ${LOW} to ${HIGH - 1} in 500 tries`);
}
