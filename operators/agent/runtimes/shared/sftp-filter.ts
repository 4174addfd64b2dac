// The packet-level filter between an SFTP client (the tunnel stream) and OpenSSH's sftp-server,
// wherever that runs (a child of the agent, or in a container through pods/exec): packets are
// framed both ways, every request passes the path policy first (sftp-policy.ts), and a refusal
// is answered between the server's own packets, never inside one. Both directions keep their
// backpressure: a request waits for the server to take the one before, a response for the client.
// Where the policy only judges names (a container's files), the filter also asks the server itself
// where each path leads (a realpath request of its own, before the client's request goes on), so
// a symlink in the container pointing out of the root is refused too.
import { posix } from "node:path";
import { Duplex } from "node:stream";
import { whenDrainedOrClosed } from "../../../lib/stream-drain.ts";
import { ResponsePassage } from "./sftp-passage.ts";
import {
  checkRequest,
  judgePaths,
  type PolicyOptions,
  type RequestPath,
  SFTP,
  STATUS,
  type Verdict,
} from "./sftp-policy.ts";

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

const VERSION = 2;
const NAME = 104;

/**
 * Request ids as the server sees them: the client's are renumbered, and renumbered back in the
 * answers, so the filter's own requests never share an id with one of the client's.
 */
class Renumbering {
  #next = 0;
  readonly #owners = new Map<number, number | ((answer: Buffer | undefined) => void)>();

  #take(owner: number | ((answer: Buffer | undefined) => void)): number {
    const id = this.#next;
    this.#next = (this.#next + 1) >>> 0;
    this.#owners.set(id, owner);
    return id;
  }

  /** Renumbers a request of the client's, in place. */
  outgoing(packet: Buffer): void {
    packet.writeUInt32BE(this.#take(packet.readUInt32BE(5)), 5);
  }

  /** A realpath request of the filter's own; `answered` gets the answer (undefined: none came). */
  realpath(path: string, answered: (answer: Buffer | undefined) => void): Buffer {
    const name = Buffer.from(path);
    const packet = Buffer.alloc(4 + 1 + 4 + 4 + name.length);
    packet.writeUInt32BE(packet.length - 4, 0);
    packet.writeUInt8(SFTP.REALPATH, 4);
    packet.writeUInt32BE(this.#take(answered), 5);
    packet.writeUInt32BE(name.length, 9);
    name.copy(packet, 13);
    return packet;
  }

  /** Renumbers an answer back, in place: false when it answers the filter's own request. */
  incoming(packet: Buffer): boolean {
    if (packet[4] === VERSION || packet.length < 9) return true;
    const id = packet.readUInt32BE(5);
    const owner = this.#owners.get(id);
    this.#owners.delete(id);
    if (typeof owner === "function") {
      owner(packet);
      return false;
    }
    if (owner !== undefined) packet.writeUInt32BE(owner, 5);
    return true;
  }

  /** The server is gone: no answer will come. */
  close(): void {
    for (const owner of this.#owners.values()) if (typeof owner === "function") owner(undefined);
    this.#owners.clear();
  }
}

/** The path of a realpath answer (NAME with one entry), or undefined for an error status. */
function answeredPath(answer: Buffer | undefined): string | undefined {
  if (!answer || answer[4] !== NAME || answer.length < 17) return undefined;
  const length = answer.readUInt32BE(13);
  return answer.length < 17 + length ? undefined : answer.subarray(17, 17 + length).toString();
}

function statusPacket(id: number, message: string, status: number): Buffer {
  const text = Buffer.from(message);
  const body = Buffer.alloc(1 + 4 + 4 + 4 + text.length + 4);
  let at = body.writeUInt8(SFTP.STATUS, 0);
  at = body.writeUInt32BE(id, at);
  at = body.writeUInt32BE(status, at);
  at = body.writeUInt32BE(text.length, at);
  at += text.copy(body, at);
  body.writeUInt32BE(0, at); // language tag
  const length = Buffer.alloc(4);
  length.writeUInt32BE(body.length);
  return Buffer.concat([length, body]);
}

/** The INIT of SFTP version 3, the only version OpenSSH's sftp-server and clients speak. */
const INIT_V3 = Buffer.from([0, 0, 0, 5, SFTP.INIT, 0, 0, 0, 3]);
const VERSION_WAIT_MS = 30_000;
/** serverVersion's rejection when the server's stream ended, closed or failed before the answer. */
export const SERVER_ENDED = "it ended before answering";

/**
 * Asks `server` for its VERSION before a client is attached, and resolves with that packet. A
 * server that cannot start (no account for its uid, a missing program) ends here, before the
 * tunnel stream is answered, so the hub can tell the user why; afterwards it could only close
 * the stream without a word. Rejects on an end, an error, a non-VERSION answer or silence.
 */
export function serverVersion(server: Duplex): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let got = Buffer.alloc(0);
    const settle = (error?: string) => {
      clearTimeout(timer);
      server.off("data", onData);
      server.off("end", onEnd);
      server.off("close", onEnd);
      server.off("error", onEnd);
      if (error === undefined) return;
      // Destroying a Duplex.from pair reports an abort of its own: the reason is told below.
      server.on("error", () => {});
      server.destroy();
      reject(new Error(error));
    };
    const onEnd = () => settle(SERVER_ENDED);
    const onData = (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      if (got.length < 4) return;
      const length = got.readUInt32BE(0);
      if (length === 0 || length > MAX_PACKET || (got.length > 4 && got[4] !== VERSION))
        return settle("it answered with no SFTP version");
      if (got.length < 4 + length) return;
      settle();
      server.pause();
      // The server says nothing more until asked: anything after the VERSION is for the filter.
      if (got.length > 4 + length) server.unshift(got.subarray(4 + length));
      resolve(got.subarray(0, 4 + length));
    };
    const timer = setTimeout(() => settle(`no answer within ${VERSION_WAIT_MS / 1000} s`), VERSION_WAIT_MS);
    server.on("data", onData);
    server.once("end", onEnd);
    server.once("close", onEnd);
    server.once("error", onEnd);
    server.write(INIT_V3);
  });
}

/**
 * Puts the policy in front of `server` (the sftp-server's stdin and stdout as one byte stream);
 * returns the Duplex the tunnel stream is piped to. Destroying it destroys the server's stream.
 * With `version` (serverVersion's answer), the server has been initialized already: the client's
 * INIT is answered with it and never reaches the server.
 */
export function filterSftp(server: Duplex, policy: PolicyOptions, version?: Buffer): Duplex {
  const requests = new PacketSplitter();
  const { resolvedInside } = policy;
  const renumbering = resolvedInside ? new Renumbering() : undefined;
  // Answers are split into packets only where ids are renumbered; otherwise they pass uncut and
  // uncopied (sftp-passage.ts says why that matters for throughput).
  const responses = renumbering ? new PacketSplitter() : undefined;
  const passage = renumbering ? undefined : new ResponsePassage((chunk) => duplex.push(chunk), MAX_PACKET);

  const ask = (renumber: Renumbering, path: string) =>
    new Promise<string | undefined>((resolve) => {
      server.write(renumber.realpath(path, (answer) => resolve(answeredPath(answer))));
    });
  // Where each path really leads, asked of the server. Its realpath resolves as the kernel does,
  // a dangling symlink included (to where its target would be made): a path it cannot resolve
  // (a missing or non-directory component before the last, not searchable, a loop) passes, as
  // the request itself fails there for the same reason. A realpath request only names a path.
  const resolve = async (renumber: Renumbering, paths: RequestPath[]): Promise<Verdict | undefined> => {
    for (const { path, followLast, named } of paths) {
      if (named) continue;
      const resolved = await ask(renumber, followLast ? path : posix.dirname(path));
      if (resolved === undefined) continue;
      const location = followLast ? resolved : posix.join(resolved, posix.basename(path));
      if (!resolvedInside?.(location)) return { refusal: `${path} leads outside ${policy.place}` };
    }
    return undefined;
  };
  const judge = async (paths: RequestPath[]): Promise<Verdict> =>
    (await judgePaths(paths, policy)) ?? (renumbering && (await resolve(renumbering, paths))) ?? { paths };

  // a refusal is answered here: while the client does not read them, it sends nothing more
  let wakeReader: (() => void) | undefined;
  const answer = async (packet: Buffer) => {
    if (passage ? passage.refuse(packet) : duplex.push(packet)) return;
    await new Promise<void>((go) => {
      wakeReader = go;
    });
  };

  const pass = async (packets: Buffer[]) => {
    let full = false;
    for (const packet of packets) {
      if (version && packet[4] === SFTP.INIT) {
        await answer(Buffer.from(version));
        continue;
      }
      // every request but INIT carries an id after its type
      let verdict: Verdict =
        packet.length < 9 && packet[4] !== SFTP.INIT
          ? { refusal: "malformed request" }
          : checkRequest(packet.subarray(4), policy);
      if ("paths" in verdict && verdict.paths.length > 0) verdict = await judge(verdict.paths);
      if ("refusal" in verdict) {
        const id = packet.length >= 9 ? packet.readUInt32BE(5) : 0;
        await answer(statusPacket(id, verdict.refusal, verdict.status ?? STATUS.PERMISSION_DENIED));
        continue;
      }
      if (renumbering && packet[4] !== SFTP.INIT) renumbering.outgoing(packet);
      if (!server.write(packet)) full = true;
    }
    if (!full) return;
    await new Promise<void>((go) => whenDrainedOrClosed(server, go));
  };

  const duplex = new Duplex({
    write(chunk: Buffer, _encoding, done) {
      let packets: Buffer[];
      try {
        packets = requests.push(chunk);
      } catch (error) {
        done(error as Error);
        return;
      }
      pass(packets).then(() => done(), done);
    },
    final(done) {
      server.end();
      done();
    },
    read() {
      const wake = wakeReader;
      wakeReader = undefined;
      wake?.();
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
      if (passage) {
        if (!passage.write(chunk)) server.pause();
        return;
      }
      packets = responses?.push(chunk) ?? [];
    } catch (error) {
      duplex.destroy(error as Error);
      return;
    }
    for (const packet of packets) {
      if (renumbering && !renumbering.incoming(packet)) continue;
      if (!duplex.push(packet)) server.pause();
    }
  });
  server.once("close", () => renumbering?.close());
  server.once("end", () => duplex.push(null));
  server.on("error", (error) => duplex.destroy(error));
  return duplex;
}
