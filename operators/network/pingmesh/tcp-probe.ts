// One probe: a TCP connect to the peer, timed from connect() to the SYN-ACK (the socket's
// "connect" event), then closed at once with nothing written. A connect not answered within the
// timeout, refused or reset is a lost probe. The timeout runs on the injected clock; the RTT is
// measured on the monotonic high-resolution timer, since it is a measurement, not a schedule.

import net from "node:net";
import type { Clock } from "../../lib/clock.ts";

export type Probe = (host: string, port: number) => Promise<number | undefined>;

export function tcpProbe(clock: Clock, timeoutMs: number): Probe {
  return (host, port) =>
    new Promise((resolve) => {
      const started = process.hrtime.bigint();
      const socket = net.connect({ host, port });
      let done = false;
      const finish = (rtt: number | undefined) => {
        if (done) return;
        done = true;
        clock.clearTimeout(timer);
        socket.destroy();
        resolve(rtt);
      };
      const timer = clock.setTimeout(() => finish(undefined), timeoutMs);
      socket.once("connect", () => finish(Number(process.hrtime.bigint() - started) / 1e6));
      socket.once("error", () => finish(undefined));
    });
}
