import { EventEmitter } from "node:events";
import type { Identity } from "../pki/index.ts";
import type { MessageChannel } from "./message-channel.ts";
import type { AgentMessage, Delta, ErrorMessage, Hello, HubMessage, Snapshot } from "./protocol.ts";

export interface AgentSessionEvents {
  /** Every validated message after hello (heartbeat, report, ack, renew). */
  message: [AgentMessage];
  /**
   * The outgoing queue overflowed and was dropped (a slow agent): send a fresh snapshot.
   * Deltas sent before the snapshot arrives are pointless; the snapshot supersedes them.
   */
  resync: [];
  close: [];
}

/** One agent's live tunnel, bound to the cluster named in its certificate and nothing else. */
export class AgentSession extends EventEmitter<AgentSessionEvents> {
  readonly cluster: string;
  readonly hello: Hello;
  readonly identity: Identity;
  /** The certificate the session authenticated with; re-verified while the session lives. */
  readonly certPem: string;
  #channel: MessageChannel<AgentMessage, HubMessage>;
  #acked: number | undefined;

  constructor(
    channel: MessageChannel<AgentMessage, HubMessage>,
    identity: Identity,
    certPem: string,
    hello: Hello,
  ) {
    super();
    this.#channel = channel;
    this.identity = identity;
    this.certPem = certPem;
    this.cluster = identity.cluster ?? identity.name;
    this.hello = hello;
  }

  /** The last generation the agent acknowledged, if any. */
  get ackedGeneration(): number | undefined {
    return this.#acked;
  }

  get closed(): boolean {
    return this.#channel.closed;
  }

  /** Bytes queued for this agent beyond what SSH flow control accepted. */
  get queuedBytes(): number {
    return this.#channel.queuedBytes;
  }

  /**
   * Queues a desired-set message. A snapshot drops unsent snapshots and deltas first. Returns
   * false when the session is closed or the queue overflowed ('resync' follows).
   */
  send(message: Snapshot | Delta | ErrorMessage): boolean {
    if (message.type === "snapshot") {
      return this.#channel.send(message, (queued) => queued.type === "snapshot" || queued.type === "delta");
    }
    return this.#channel.send(message);
  }

  close(): void {
    this.#channel.close();
  }

  /** @internal the server records acknowledgements before emitting them. */
  recordAck(generation: number): void {
    if (this.#acked === undefined || generation > this.#acked) this.#acked = generation;
  }
}
