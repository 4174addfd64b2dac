// PINGs on a nodeserver's HTTP/2 sessions to the hub's relay (its pooled connections and its
// reverse links). A cut link (a partition, a peer frozen or gone without a FIN or RST) leaves a
// session that looks open: an idle one would never learn otherwise, a busy one only when TCP gives
// up on its retransmissions (about 15 minutes). A session that answers none of `missed` PINGs in
// a row is destroyed, so the pool dials a fresh connection and the reverse link's loop connects
// again, as SSH's ServerAliveInterval × ServerAliveCountMax does for the agents' tunnels.
import type { Http2Session } from "node:http2";

export interface KeepaliveOptions {
  /** How often a PING is sent. */
  everyMs: number;
  /** Intervals in a row without an answer after which the session is taken for cut. */
  missed: number;
}

/** Ten seconds × 3: a link cut for 30 s is let go; a loaded peer has 30 s to answer. */
export const RELAY_KEEPALIVE: KeepaliveOptions = { everyMs: 10_000, missed: 3 };

/** Pings `session` until it closes; destroys it when `missed` PINGs in a row went unanswered. */
export function keepSessionAlive(session: Http2Session, options: KeepaliveOptions = RELAY_KEEPALIVE): void {
  let unanswered = 0;
  const timer = setInterval(() => {
    if (session.closed || session.destroyed) {
      clearInterval(timer);
      return;
    }
    if (unanswered >= options.missed) {
      clearInterval(timer);
      session.destroy(
        new Error(`no answer to ${options.missed} PINGs ${options.everyMs} ms apart: the link is cut`),
      );
      return;
    }
    unanswered++;
    // false when the peer has not answered earlier PINGs yet: counted as unanswered all the same
    session.ping((error) => {
      if (!error) unanswered = 0;
    });
  }, options.everyMs);
  timer.unref();
  session.once("close", () => clearInterval(timer));
}
