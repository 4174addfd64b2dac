// The wire form of SWIM messages: a 32-byte HMAC-SHA256 tag over the body, then the body as JSON.
// The tag is checked before the body is parsed, so a datagram from outside the group (no key, the
// wrong cluster's key) costs one HMAC and is never read; every datagram is at most
// MAX_MESSAGE_BYTES, which fits an Ethernet MTU unfragmented, and updates that do not fit wait for
// the next message. Replaying a captured datagram can only repeat what a member already said:
// incarnation numbers order every claim (member.ts).
import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";

export const MAX_MESSAGE_BYTES = 1400;
const TAG_BYTES = 32;
const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
const ADDRESS = /^[0-9A-Za-z.:[\]-]{1,80}:[0-9]{1,5}$/;
const MAX_INCARNATION = Number.MAX_SAFE_INTEGER;

export type MemberState = "alive" | "suspect" | "dead" | "left";
const STATES = new Set<string>(["alive", "suspect", "dead", "left"]);

/** What one member says about another (or itself), ordered by incarnation. */
export interface Update {
  id: string;
  address: string;
  state: MemberState;
  incarnation: number;
}

export type MessageType = "ping" | "ack" | "ping-req" | "join" | "sync";
const TYPES = new Set<string>(["ping", "ack", "ping-req", "join", "sync"]);

export interface Message {
  type: MessageType;
  /** The sender, alive at its incarnation: every message is evidence that it lives. */
  from: { id: string; address: string; incarnation: number };
  /** Matches an ack to its ping (direct or relayed). */
  seq: number;
  /** ping-req: whom to ping on the sender's behalf. */
  target?: { id: string; address: string };
  /** Piggybacked updates (sync: the sender's table). */
  updates: Update[];
}

/** The group key of `cluster`: HKDF-SHA256 of the cluster's secret, so each cluster has its own. */
export function groupKey(secret: string | Buffer, cluster: string): Buffer {
  if (secret.length === 0) throw new Error("the group secret is empty");
  return Buffer.from(hkdfSync("sha256", secret, "rlark-agentgroup/v1", `cluster:${cluster}`, 32));
}

export function isMemberId(id: string): boolean {
  return ID.test(id);
}

function tag(key: Buffer, body: Buffer): Buffer {
  return createHmac("sha256", key).update(body).digest();
}

/** The datagram for `message`; throws when it would exceed MAX_MESSAGE_BYTES (the caller sizes updates). */
export function encode(message: Message, key: Buffer): Buffer {
  const body = Buffer.from(JSON.stringify(message));
  if (body.length + TAG_BYTES > MAX_MESSAGE_BYTES)
    throw new Error(
      `a ${message.type} message of ${body.length + TAG_BYTES} bytes exceeds ${MAX_MESSAGE_BYTES}`,
    );
  return Buffer.concat([tag(key, body), body]);
}

/** Bytes an update adds to a message's JSON, to fill messages without encoding twice. */
export function updateBytes(update: Update): number {
  return Buffer.byteLength(JSON.stringify(update)) + 1;
}

/** Bytes of `message` without updates. */
export function baseBytes(message: Message): number {
  return TAG_BYTES + Buffer.byteLength(JSON.stringify({ ...message, updates: [] }));
}

/** The message in `data`, or why it was dropped (never an exception: datagrams are untrusted). */
export function decode(data: Buffer, key: Buffer): Message | { dropped: string } {
  if (data.length > MAX_MESSAGE_BYTES)
    return { dropped: `${data.length} bytes exceeds ${MAX_MESSAGE_BYTES}` };
  if (data.length <= TAG_BYTES) return { dropped: "too short" };
  const body = data.subarray(TAG_BYTES);
  if (!timingSafeEqual(data.subarray(0, TAG_BYTES), tag(key, body))) return { dropped: "bad MAC" };
  try {
    return parse(JSON.parse(body.toString("utf8")));
  } catch (error) {
    return { dropped: (error as Error).message };
  }
}

function record(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error(`${what} is not an object`);
  return v as Record<string, unknown>;
}

function member(v: unknown, what: string): { id: string; address: string } {
  const o = record(v, what);
  if (typeof o.id !== "string" || !ID.test(o.id)) throw new Error(`${what}.id is not a member id`);
  if (typeof o.address !== "string" || !ADDRESS.test(o.address))
    throw new Error(`${what}.address is not host:port`);
  return { id: o.id, address: o.address };
}

function incarnation(v: unknown, what: string): number {
  if (!Number.isSafeInteger(v) || (v as number) < 0 || (v as number) > MAX_INCARNATION)
    throw new Error(`${what} is not an incarnation`);
  return v as number;
}

function parse(v: unknown): Message {
  const o = record(v, "message");
  if (typeof o.type !== "string" || !TYPES.has(o.type)) throw new Error("unknown message type");
  const from = record(o.from, "from");
  const seq = o.seq;
  if (!Number.isSafeInteger(seq) || (seq as number) < 0) throw new Error("seq is not a counter");
  if (!Array.isArray(o.updates)) throw new Error("updates is not a list");
  const updates = o.updates.map((u, i): Update => {
    const entry = record(u, `updates[${i}]`);
    if (typeof entry.state !== "string" || !STATES.has(entry.state))
      throw new Error(`updates[${i}].state is unknown`);
    return {
      ...member(entry, `updates[${i}]`),
      state: entry.state as MemberState,
      incarnation: incarnation(entry.incarnation, `updates[${i}].incarnation`),
    };
  });
  const message: Message = {
    type: o.type as MessageType,
    from: { ...member(from, "from"), incarnation: incarnation(from.incarnation, "from.incarnation") },
    seq: seq as number,
    updates,
  };
  if (message.type === "ping-req") message.target = member(o.target, "target");
  return message;
}
