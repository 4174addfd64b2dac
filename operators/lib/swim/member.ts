// One SWIM member (Das, Gupta, Motivala 2002): every probe interval it pings the next member of a
// shuffled round-robin; a member silent for the probe timeout is pinged through k others
// (ping-req); one silent to those too by the end of the interval becomes suspect, and a suspect
// that does not refute within the suspicion timeout is declared dead. What members learn travels
// piggybacked on pings and acks, each update on λ log n messages. Incarnation numbers order the
// claims: only a member raises its own, to refute a suspicion of itself. Pure: time comes from the
// injected Clock and bytes go through the injected Transport (udp-transport.ts on real sockets).
import type { Clock, TimerId } from "../clock.ts";
import {
  baseBytes,
  decode,
  encode,
  isMemberId,
  MAX_MESSAGE_BYTES,
  type MemberState,
  type Message,
  type MessageType,
  type Update,
  updateBytes,
} from "./codec.ts";
import { retransmitLimit, type SwimParams, suspicionTimeoutMs, swimParams } from "./params.ts";

/** Datagrams to and from `host:port` addresses. */
export interface Transport {
  /** This member's own address, as others reach it. */
  readonly address: string;
  send(to: string, data: Buffer): void;
  onMessage(handler: (data: Buffer, from: string) => void): void;
  close(): Promise<void>;
}

export interface MemberInfo {
  id: string;
  address: string;
  state: MemberState;
  incarnation: number;
  /** When this member's state last changed here (clock milliseconds). */
  since: number;
}

export interface GroupSummary {
  alive: number;
  suspect: number;
  dead: number;
  left: number;
}

export interface SwimMemberOptions {
  id: string;
  /** The group key (codec.ts groupKey): messages without its MAC are dropped unread. */
  key: Buffer;
  transport: Transport;
  clock: Clock;
  params?: Partial<SwimParams>;
  /** Addresses to join through. */
  seeds?: readonly string[];
  /** Called for every state change of a member, this one's included. */
  onChange?: (member: MemberInfo) => void;
  /** Tests pass a seeded generator. */
  random?: () => number;
}

interface Probe {
  seq: number;
  target: string;
  acked: boolean;
  timeout?: TimerId;
}

interface Broadcast {
  update: Update;
  transmits: number;
}

export class SwimMember {
  readonly id: string;
  readonly params: SwimParams;
  readonly #key: Buffer;
  readonly #transport: Transport;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #onChange: ((member: MemberInfo) => void) | undefined;
  readonly #members = new Map<string, MemberInfo>();
  readonly #broadcasts = new Map<string, Broadcast>();
  readonly #suspicions = new Map<string, TimerId>();
  /** seq → what to do with its ack: finish our probe, or relay it to whoever asked (ping-req). */
  readonly #acks = new Map<number, { onAck: () => void; expire: TimerId }>();
  #seeds: readonly string[];
  #order: string[] = [];
  #probe: Probe | undefined;
  #seq = 0;
  #tick: TimerId | undefined;
  #stopped = false;
  #dropped = 0;

  constructor(options: SwimMemberOptions) {
    if (!isMemberId(options.id)) throw new Error(`member id "${options.id}" is not 1-63 of [A-Za-z0-9._-]`);
    if (options.key.length < 16) throw new Error("the group key is shorter than 16 bytes");
    this.id = options.id;
    this.params = swimParams(options.params);
    this.#key = options.key;
    this.#transport = options.transport;
    this.#clock = options.clock;
    this.#random = options.random ?? Math.random;
    this.#onChange = options.onChange;
    this.#seeds = (options.seeds ?? []).filter((s) => s !== options.transport.address);
    this.#set({ id: this.id, address: this.#transport.address, state: "alive", incarnation: 0 });
    this.#transport.onMessage((data) => this.#receive(data));
  }

  /** Sends a join to every seed and starts probing. */
  start(): void {
    this.#join();
    this.#tick = this.#clock.setTimeout(() => this.#period(), this.params.probeIntervalMs);
  }

  /** Every member known here, this one included, sorted by id. */
  members(): MemberInfo[] {
    return [...this.#members.values()].map((m) => ({ ...m })).sort((a, b) => a.id.localeCompare(b.id));
  }

  summary(): GroupSummary {
    const summary: GroupSummary = { alive: 0, suspect: 0, dead: 0, left: 0 };
    for (const m of this.#members.values()) summary[m.state]++;
    return summary;
  }

  /** Datagrams dropped unread (bad MAC, too large, malformed) since the start. */
  get dropped(): number {
    return this.#dropped;
  }

  suspicionTimeoutMs(): number {
    return suspicionTimeoutMs(this.params, this.#members.size);
  }

  /** Leaves gracefully: says so to k + 1 members (they gossip it on), then stops. */
  async leave(): Promise<void> {
    const self = this.#self();
    const left: Update = { ...this.#update(self), state: "left", incarnation: self.incarnation + 1 };
    this.#set(left);
    for (const m of this.#pick(this.params.indirectK + 1, new Set([this.id])))
      this.#send(m.address, "ping", this.#nextSeq(), undefined, [left]);
    await this.stop();
  }

  /** Stops probing and closes the transport; the others will find this member dead. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#tick) this.#clock.clearTimeout(this.#tick);
    if (this.#probe?.timeout) this.#clock.clearTimeout(this.#probe.timeout);
    for (const timer of this.#suspicions.values()) this.#clock.clearTimeout(timer);
    for (const { expire } of this.#acks.values()) this.#clock.clearTimeout(expire);
    this.#suspicions.clear();
    this.#acks.clear();
    await this.#transport.close();
  }

  #self(): MemberInfo {
    return this.#members.get(this.id) as MemberInfo;
  }

  #update(m: MemberInfo): Update {
    return { id: m.id, address: m.address, state: m.state, incarnation: m.incarnation };
  }

  #nextSeq(): number {
    this.#seq = (this.#seq + 1) % Number.MAX_SAFE_INTEGER;
    return this.#seq;
  }

  #join(): void {
    // Until a seed answers, nobody knows this member: ask again each period (#period).
    for (const seed of this.#seeds) this.#send(seed, "join", this.#nextSeq());
  }

  /** One protocol period: settle the last probe, then probe the next member. */
  #period(): void {
    if (this.#stopped) return;
    this.#tick = this.#clock.setTimeout(() => this.#period(), this.params.probeIntervalMs);
    const last = this.#probe;
    if (last && !last.acked) {
      const target = this.#members.get(last.target);
      if (target?.state === "alive") this.#apply({ ...this.#update(target), state: "suspect" });
    }
    if (this.#live().length === 0) this.#join();
    const target = this.#nextTarget();
    if (!target) {
      this.#probe = undefined;
      return;
    }
    const probe: Probe = { seq: this.#nextSeq(), target: target.id, acked: false };
    this.#probe = probe;
    this.#expectAck(probe.seq, () => {
      probe.acked = true;
    });
    this.#send(target.address, "ping", probe.seq);
    probe.timeout = this.#clock.setTimeout(() => {
      if (probe.acked || this.#stopped) return;
      for (const helper of this.#pick(this.params.indirectK, new Set([this.id, target.id])))
        this.#send(helper.address, "ping-req", probe.seq, { id: target.id, address: target.address });
    }, this.params.probeTimeoutMs);
  }

  /** Alive and suspect members other than this one: whom to probe and gossip to. */
  #live(): MemberInfo[] {
    return [...this.#members.values()].filter(
      (m) => m.id !== this.id && (m.state === "alive" || m.state === "suspect"),
    );
  }

  #nextTarget(): MemberInfo | undefined {
    for (;;) {
      if (this.#order.length === 0) {
        this.#order = this.#shuffle(this.#live().map((m) => m.id));
        if (this.#order.length === 0) return undefined;
      }
      const id = this.#order.shift() as string;
      const m = this.#members.get(id);
      if (m && m.id !== this.id && (m.state === "alive" || m.state === "suspect")) return m;
    }
  }

  #shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.#random() * (i + 1));
      [items[i], items[j]] = [items[j] as T, items[i] as T];
    }
    return items;
  }

  #pick(count: number, except: Set<string>): MemberInfo[] {
    return this.#shuffle(this.#live().filter((m) => !except.has(m.id))).slice(0, count);
  }

  /** Acks are awaited for one protocol period at most: a late one finds nothing. */
  #expectAck(seq: number, onAck: () => void): void {
    const expire = this.#clock.setTimeout(() => this.#acks.delete(seq), this.params.probeIntervalMs);
    this.#acks.set(seq, { onAck, expire });
  }

  #send(
    to: string,
    type: MessageType,
    seq: number,
    target?: { id: string; address: string },
    updates?: Update[],
  ): void {
    const self = this.#self();
    const message: Message = {
      type,
      from: { id: this.id, address: self.address, incarnation: self.incarnation },
      seq,
      ...(target ? { target } : {}),
      updates: [],
    };
    message.updates = updates ?? this.#piggyback(MAX_MESSAGE_BYTES - baseBytes(message));
    this.#transport.send(to, encode(message, this.#key));
  }

  /** The least-sent updates that fit in `room` bytes; each is dropped after its retransmit limit. */
  #piggyback(room: number): Update[] {
    const limit = retransmitLimit(this.params, this.#members.size);
    const out: Update[] = [];
    let left = room;
    for (const [id, b] of [...this.#broadcasts].sort((a, b) => a[1].transmits - b[1].transmits)) {
      const size = updateBytes(b.update);
      if (size > left) continue;
      left -= size;
      out.push(b.update);
      if (++b.transmits >= limit) this.#broadcasts.delete(id);
    }
    return out;
  }

  /** The sync answer to a join: the table, as many messages as it takes. */
  #sync(to: string, seq: number): void {
    const self = this.#self();
    const room =
      MAX_MESSAGE_BYTES -
      baseBytes({
        type: "sync",
        from: { id: this.id, address: self.address, incarnation: self.incarnation },
        seq,
        updates: [],
      });
    let chunk: Update[] = [];
    let used = 0;
    for (const m of this.#members.values()) {
      const update = this.#update(m);
      const size = updateBytes(update);
      if (used + size > room) {
        this.#send(to, "sync", seq, undefined, chunk);
        chunk = [];
        used = 0;
      }
      chunk.push(update);
      used += size;
    }
    if (chunk.length > 0) this.#send(to, "sync", seq, undefined, chunk);
  }

  #receive(data: Buffer): void {
    if (this.#stopped) return;
    const message = decode(data, this.#key);
    if ("dropped" in message) {
      this.#dropped++;
      return;
    }
    // The sender lives at its incarnation; its address is the one it states, not the datagram's
    // source, so a member behind an address of its own choosing (0.0.0.0 binds) is reached there.
    this.#apply({ ...message.from, state: "alive" });
    // A member we hold suspect or dead hears so in our answer, and refutes if it lives.
    const sender = this.#members.get(message.from.id);
    if (sender && sender.state !== "alive")
      this.#broadcasts.set(sender.id, { update: this.#update(sender), transmits: 0 });
    for (const update of message.updates) this.#apply(update);
    switch (message.type) {
      case "ping":
        this.#send(message.from.address, "ack", message.seq);
        break;
      case "ack": {
        const waiting = this.#acks.get(message.seq);
        if (waiting) {
          this.#clock.clearTimeout(waiting.expire);
          this.#acks.delete(message.seq);
          waiting.onAck();
        }
        break;
      }
      case "ping-req": {
        const target = message.target as { id: string; address: string };
        const relayed = this.#nextSeq();
        this.#expectAck(relayed, () => this.#send(message.from.address, "ack", message.seq));
        this.#send(target.address, "ping", relayed);
        break;
      }
      case "join":
        this.#sync(message.from.address, message.seq);
        break;
      case "sync":
        break;
    }
  }

  /** Applies one claim by SWIM's precedence rules; a claim against this member is refuted. */
  #apply(update: Update): void {
    if (update.id === this.id) {
      const self = this.#self();
      if (update.state !== "alive" && update.incarnation >= self.incarnation && self.state === "alive") {
        // Refute: only this member raises its incarnation, and the new one beats the claim.
        this.#set({ ...this.#update(self), incarnation: update.incarnation + 1 });
      }
      return;
    }
    const known = this.#members.get(update.id);
    if (!known) {
      if (this.#members.size >= this.params.maxMembers) return;
      this.#set(update);
      return;
    }
    const newer = update.incarnation > known.incarnation;
    const same = update.incarnation === known.incarnation;
    let wins: boolean;
    switch (update.state) {
      case "alive":
        wins = newer;
        break;
      case "suspect":
        wins = (newer && known.state !== "left") || (same && known.state === "alive");
        break;
      case "dead":
        wins =
          (newer && known.state !== "left") ||
          (same && (known.state === "alive" || known.state === "suspect"));
        break;
      case "left":
        wins = newer || (same && known.state !== "left");
        break;
    }
    if (wins) this.#set(update);
  }

  /** Records a change, gossips it on, and keeps the suspicion timer in step with the state. */
  #set(update: Update): void {
    const known = this.#members.get(update.id);
    const info: MemberInfo = {
      ...update,
      since: known && known.state === update.state ? known.since : this.#clock.now(),
    };
    this.#members.set(update.id, info);
    this.#broadcasts.set(update.id, { update: { ...update }, transmits: 0 });
    const timer = this.#suspicions.get(update.id);
    if (timer && update.state !== "suspect") {
      this.#clock.clearTimeout(timer);
      this.#suspicions.delete(update.id);
    }
    if (update.state === "suspect" && !timer && update.id !== this.id) {
      const incarnation = update.incarnation;
      this.#suspicions.set(
        update.id,
        this.#clock.setTimeout(() => {
          this.#suspicions.delete(update.id);
          const now = this.#members.get(update.id);
          if (now?.state === "suspect" && now.incarnation === incarnation)
            this.#set({ ...this.#update(now), state: "dead" });
        }, this.suspicionTimeoutMs()),
      );
    }
    if (!known || known.state !== info.state || known.incarnation !== info.incarnation)
      this.#onChange?.({ ...info });
  }
}
