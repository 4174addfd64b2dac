// SWIM's transport on a real UDP socket. Datagrams over MAX_MESSAGE_BYTES are cut by the receive
// buffer's size and dropped by the codec; a send to an address that does not parse is dropped
// (an update can carry any address a member claims), never thrown into the protocol loop.
import { createSocket, type Socket } from "node:dgram";
import { isIP } from "node:net";
import { MAX_MESSAGE_BYTES } from "./codec.ts";
import type { Transport } from "./member.ts";

export interface UdpTransportOptions {
  /** Address to bind: 127.0.0.1, 0.0.0.0, an interface's IPv4. */
  host: string;
  /** 0 takes a free port. */
  port: number;
  /** The address others reach this member at, when it is not the bound one (0.0.0.0). */
  advertise?: string;
}

function splitAddress(address: string): { host: string; port: number } | undefined {
  const at = address.lastIndexOf(":");
  const host = address.slice(0, at).replace(/^\[(.*)\]$/, "$1");
  const port = Number(address.slice(at + 1));
  if (at < 1 || !isIP(host) || !Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  return { host, port };
}

export class UdpTransport implements Transport {
  readonly address: string;
  readonly #socket: Socket;
  /** Datagrams sent and received, for a group's metrics and for tests that wait for quiet. */
  sent = 0;
  received = 0;
  #sending = 0;
  #drained: (() => void) | undefined;

  private constructor(socket: Socket, address: string) {
    this.#socket = socket;
    this.address = address;
  }

  static async open(options: UdpTransportOptions): Promise<UdpTransport> {
    if (isIP(options.host) !== 4)
      throw new Error(`group listen address ${options.host} is not an IPv4 address`);
    const socket = createSocket({ type: "udp4", recvBufferSize: 1 << 20 });
    await new Promise<void>((resolve, reject) => {
      socket.once("error", reject);
      socket.bind(options.port, options.host, () => {
        socket.off("error", reject);
        resolve();
      });
    });
    // An ICMP unreachable from a dead member's port surfaces as an error: it is what SWIM detects
    // by silence, not a reason to stop.
    socket.on("error", () => {});
    const port = socket.address().port;
    const advertise = options.advertise ?? `${options.host}:${port}`;
    if (!splitAddress(advertise)) {
      socket.close();
      throw new Error(`group advertise address ${advertise} is not ipv4:port`);
    }
    return new UdpTransport(socket, advertise);
  }

  send(to: string, data: Buffer): void {
    const target = splitAddress(to);
    if (!target || data.length > MAX_MESSAGE_BYTES) return;
    this.sent++;
    this.#sending++;
    this.#socket.send(data, target.port, target.host, () => {
      if (--this.#sending === 0) this.#drained?.();
    });
  }

  onMessage(handler: (data: Buffer, from: string) => void): void {
    this.#socket.on("message", (data, rinfo) => {
      this.received++;
      handler(data, `${rinfo.address}:${rinfo.port}`);
    });
  }

  /** Closes once the datagrams already handed over are sent: a leaving member's goodbye goes out. */
  async close(): Promise<void> {
    if (this.#sending > 0)
      await new Promise<void>((resolve) => {
        this.#drained = resolve;
      });
    await new Promise<void>((resolve) => this.#socket.close(() => resolve()));
  }
}
