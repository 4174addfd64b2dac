/**
 * Passes sftp-server's responses on as they arrive, neither copied nor cut at packet ends: one
 * push per SFTP packet ends an SSH packet short at each of them (a 32 KiB read answer, as older
 * clients ask, is 13 bytes longer than an SSH packet: a 13-byte packet after every full one,
 * each paying a cipher set-up on both hops). It only follows where packets end, so a refusal
 * goes in at such an end.
 */
export class ResponsePassage {
  /** Bytes of the current packet still to come, its length prefix included. */
  #left = 0;
  #prefix = Buffer.alloc(4);
  #prefixHave = 0;
  #refusals: Buffer[] = [];
  readonly #push: (chunk: Buffer) => boolean;
  readonly #maxPacket: number;

  constructor(push: (chunk: Buffer) => boolean, maxPacket: number) {
    this.#push = push;
    this.#maxPacket = maxPacket;
  }

  /**
   * A refusal now, or at the end of the packet on its way. False when the caller should wait for
   * the reader before the next one: it did not take this one, or it is held behind a packet (so
   * a client whose requests are all refused cannot pile refusals up while it reads nothing).
   */
  refuse(packet: Buffer): boolean {
    if (this.#left === 0 && this.#prefixHave === 0) return this.#push(packet);
    this.#refusals.push(packet);
    return false;
  }

  /** Forwards a chunk of sftp-server's output; false once the reader wants no more for now. */
  write(chunk: Buffer): boolean {
    let more = true;
    let from = 0;
    let at = 0;
    while (at < chunk.length) {
      if (this.#left === 0) {
        const take = Math.min(4 - this.#prefixHave, chunk.length - at);
        chunk.copy(this.#prefix, this.#prefixHave, at, at + take);
        this.#prefixHave += take;
        at += take;
        if (this.#prefixHave < 4) break;
        const length = this.#prefix.readUInt32BE(0);
        if (length === 0 || length > this.#maxPacket) throw new Error(`an SFTP packet of ${length} bytes`);
        this.#prefixHave = 0;
        this.#left = length;
      }
      const take = Math.min(this.#left, chunk.length - at);
      at += take;
      this.#left -= take;
      if (this.#left === 0 && this.#refusals.length > 0) {
        more = this.#push(chunk.subarray(from, at)) && more;
        for (const refusal of this.#refusals.splice(0)) more = this.#push(refusal) && more;
        from = at;
      }
    }
    if (from < chunk.length) more = this.#push(from === 0 ? chunk : chunk.subarray(from)) && more;
    return more;
  }
}
