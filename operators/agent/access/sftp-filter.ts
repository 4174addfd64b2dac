// The packet-level filter between an SFTP client (the tunnel stream) and OpenSSH's sftp-server,
// wherever that runs (a child of the agent, or in a container through pods/exec): packets are
// framed both ways, every request passes the path policy first (sftp-policy.ts), and a refusal
// is answered between the server's own packets, never inside one. Both directions keep their
// backpressure: a request waits for the server to take the one before, a response for the client.
import { Duplex } from "node:stream";
import { checkRequest, type PolicyOptions, SFTP } from "./sftp-policy.ts";

/** sftp-server's own packet limit is 256 KiB; a little more for the header. */
const MAX_PACKET = 256 * 1024 + 1024;

/** The requests the server is started with (its -p list): no symlink or hardlink creation. */
export const SERVED_REQUESTS =
  "open,close,read,write,lstat,fstat,setstat,fsetstat,opendir,readdir,remove,mkdir,rmdir,realpath,stat,rename,readlink,posix-rename,statvfs,fstatvfs,fsync,limits,expand-path";

/** Splits SFTP's length-prefixed packets out of a byte stream, holding at most one partial packet. */
class PacketSplitter {
  #pending = Buffer.alloc(0);

  push(chunk: Buffer): Buffer[] {
    let data = this.#pending.length > 0 ? Buffer.concat([this.#pending, chunk]) : chunk;
    const packets: Buffer[] = [];
    while (data.length >= 4) {
      const length = data.readUInt32BE(0);
      if (length === 0 || length > MAX_PACKET) throw new Error(`an SFTP packet of ${length} bytes`);
      if (data.length < 4 + length) break;
      packets.push(data.subarray(0, 4 + length));
      data = data.subarray(4 + length);
    }
    this.#pending = data.length > 0 ? Buffer.from(data) : Buffer.alloc(0);
    return packets;
  }
}

function statusPacket(id: number, message: string): Buffer {
  const text = Buffer.from(message);
  const body = Buffer.alloc(1 + 4 + 4 + 4 + text.length + 4);
  let at = body.writeUInt8(SFTP.STATUS, 0);
  at = body.writeUInt32BE(id, at);
  at = body.writeUInt32BE(3, at); // SSH_FX_PERMISSION_DENIED
  at = body.writeUInt32BE(text.length, at);
  at += text.copy(body, at);
  body.writeUInt32BE(0, at); // language tag
  const length = Buffer.alloc(4);
  length.writeUInt32BE(body.length);
  return Buffer.concat([length, body]);
}

/**
 * Puts the policy in front of `server` (the sftp-server's stdin and stdout as one byte stream);
 * returns the Duplex the tunnel stream is piped to. Destroying it destroys the server's stream.
 */
export function filterSftp(server: Duplex, policy: PolicyOptions): Duplex {
  const requests = new PacketSplitter();
  const responses = new PacketSplitter();
  const duplex = new Duplex({
    write(chunk: Buffer, _encoding, done) {
      let packets: Buffer[];
      try {
        packets = requests.push(chunk);
      } catch (error) {
        done(error as Error);
        return;
      }
      let full = false;
      for (const packet of packets) {
        const refusal = checkRequest(packet.subarray(4), policy);
        if (refusal === undefined) {
          if (!server.write(packet)) full = true;
        } else {
          duplex.push(statusPacket(packet.length >= 9 ? packet.readUInt32BE(5) : 0, refusal));
        }
      }
      if (!full) return done();
      const go = () => {
        server.off("drain", go);
        server.off("close", go);
        done();
      };
      server.on("drain", go);
      server.on("close", go);
    },
    final(done) {
      server.end();
      done();
    },
    read() {
      server.resume();
    },
    destroy(error, done) {
      server.destroy();
      done(error);
    },
  });
  server.on("data", (chunk: Buffer) => {
    let packets: Buffer[];
    try {
      packets = responses.push(chunk);
    } catch (error) {
      duplex.destroy(error as Error);
      return;
    }
    for (const packet of packets) {
      if (!duplex.push(packet)) server.pause();
    }
  });
  server.once("end", () => duplex.push(null));
  server.once("error", (error) => duplex.destroy(error));
  return duplex;
}
