// SFTP into a process-runtime pod: OpenSSH's sftp-server runs in the pod's directory with only
// the requests we serve enabled (no symlink or hardlink creation), and every request passes
// the path policy first (sftp-policy.ts). Packets are framed both ways so a refusal is
// answered between the server's own packets, never inside one.
import { spawn } from "node:child_process";
import { realpathSync } from "node:fs";
import { Duplex } from "node:stream";
import { ResponsePassage } from "./sftp-passage.ts";
import { checkRequest, SFTP } from "./sftp-policy.ts";

export interface FilesOptions {
  /** OpenSSH's sftp-server. Default /usr/lib/openssh/sftp-server. */
  sftpServer?: string;
  /** Largest file an upload may write. Default 64 GiB. */
  maxFileBytes?: number;
}

const SERVED =
  "open,close,read,write,lstat,fstat,setstat,fsetstat,opendir,readdir,remove,mkdir,rmdir,realpath,stat,rename,readlink,posix-rename,statvfs,fstatvfs,fsync,limits,expand-path";
/** sftp-server's own packet limit is 256 KiB; a little more for the header. */
const MAX_PACKET = 256 * 1024 + 1024;

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

/** Starts an SFTP server confined to `root`; returns the Duplex the tunnel stream is piped to. */
export function startFiles(root: string, options: FilesOptions = {}): Duplex {
  const realRoot = realpathSync(root);
  const policy = { root: realRoot, maxFileBytes: options.maxFileBytes ?? 64 * 1024 ** 3 };
  const server = spawn(
    options.sftpServer ?? "/usr/lib/openssh/sftp-server",
    ["-d", realRoot, "-p", SERVED, "-l", "ERROR"],
    { cwd: realRoot, stdio: ["pipe", "pipe", "ignore"] },
  );
  const requests = new PacketSplitter();
  const responses = new ResponsePassage((chunk) => duplex.push(chunk), MAX_PACKET);
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
          if (!server.stdin.write(packet)) full = true;
        } else {
          responses.refuse(statusPacket(packet.length >= 9 ? packet.readUInt32BE(5) : 0, refusal));
        }
      }
      if (full) server.stdin.once("drain", () => done());
      else done();
    },
    final(done) {
      server.stdin.end();
      done();
    },
    read() {
      server.stdout.resume();
    },
    destroy(error, done) {
      server.kill();
      done(error);
    },
  });
  server.stdout.on("data", (chunk: Buffer) => {
    try {
      if (!responses.write(chunk)) server.stdout.pause();
    } catch (error) {
      duplex.destroy(error as Error);
    }
  });
  server.stdout.once("end", () => duplex.push(null));
  server.stdin.on("error", () => {});
  server.once("error", (error) => duplex.destroy(error));
  return duplex;
}
