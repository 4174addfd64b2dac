import { connect as netConnect, type Socket } from "node:net";

/** A TCP connection with Nagle off, ready to hand to ssh2 as `sock`. */
export function dialNoDelay(host: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host, port });
    socket.setNoDelay(true);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`connecting to ${host}:${port} timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.off("error", onError);
      resolve(socket);
    });
    const onError = (err: Error) => {
      clearTimeout(timer);
      reject(new Error(`cannot reach the hub at ${host}:${port}: ${err.message}`));
    };
    socket.once("error", onError);
  });
}
