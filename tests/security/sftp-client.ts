// A raw SFTP v3 client for the security tests: packets an `sftp` client would never send (paths
// of 32 KiB, hundreds of requests in flight), written to the stdin of a real `ssh -s ... sftp`
// through the bastion or straight to a filter's stream; answers matched to requests by id.
import type { Readable, Writable } from "node:stream";

export const STATUS = 101;
export const HANDLE = 102;
export const FX = { OK: 0, NO_SUCH_FILE: 2, PERMISSION_DENIED: 3, FAILURE: 4 } as const;

export interface Answer {
  type: number;
  /** A STATUS answer's code, else undefined. */
  code?: number;
  /** A STATUS answer's message, else "". */
  message: string;
}

const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const str = (s: string | Buffer) => Buffer.concat([u32(Buffer.byteLength(s)), Buffer.from(s)]);

export function rawSftp(input: Writable, output: Readable) {
  let pending = Buffer.alloc(0);
  let nextId = 0;
  const waiting = new Map<number, (answer: Answer) => void>();
  let version: ((packet: Buffer) => void) | undefined;
  output.on("data", (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 4 && pending.length >= 4 + pending.readUInt32BE(0)) {
      const packet = pending.subarray(4, 4 + pending.readUInt32BE(0));
      pending = pending.subarray(4 + packet.length);
      if (packet[0] === 2) {
        version?.(packet);
        continue;
      }
      const id = packet.readUInt32BE(1);
      const type = packet[0] as number;
      const answer: Answer =
        type === STATUS
          ? {
              type,
              code: packet.readUInt32BE(5),
              message: packet.subarray(13, 13 + packet.readUInt32BE(9)).toString(),
            }
          : { type, message: "" };
      waiting.get(id)?.(answer);
      waiting.delete(id);
    }
  });
  const send = (type: number, ...parts: Buffer[]): Promise<Answer> => {
    const id = ++nextId;
    const body = Buffer.concat([Buffer.from([type]), u32(id), ...parts]);
    const answer = new Promise<Answer>((resolve) => waiting.set(id, resolve));
    input.write(Buffer.concat([u32(body.length), body]));
    return answer;
  };
  return {
    init(): Promise<Buffer> {
      const answer = new Promise<Buffer>((resolve) => {
        version = resolve;
      });
      input.write(Buffer.from([0, 0, 0, 5, 1, 0, 0, 0, 3]));
      return answer;
    },
    /** OPEN with WRITE|CREAT|TRUNC, or READ alone. */
    open: (file: string | Buffer, write = true) =>
      send(3, str(file), u32(write ? 0x02 | 0x08 | 0x10 : 0x01), u32(0)),
    stat: (file: string | Buffer) => send(17, str(file)),
    mkdir: (file: string | Buffer) => send(14, str(file), u32(0)),
    /** Requests still unanswered. */
    outstanding: () => waiting.size,
  };
}
