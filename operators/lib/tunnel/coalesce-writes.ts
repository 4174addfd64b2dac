import type { Socket } from "node:net";

/**
 * ssh2 writes every SSH packet to its socket on its own: one libuv write (and one syscall) per
 * 32 KiB packet. Corking the socket for the rest of the tick on its first write sends all the
 * packets one read produced in a single writev; nothing waits longer than the current tick.
 * Measured by hack/bench/access/hops.ts (docs/tunnel.md, "Throughput").
 */
export function coalesceWrites(socket: Socket): void {
  const write = socket.write;
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  socket.write = function (this: Socket, ...args: Parameters<Socket["write"]>): boolean {
    if (!corked) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return write.apply(this, args as Parameters<typeof write>);
  } as Socket["write"];
}
