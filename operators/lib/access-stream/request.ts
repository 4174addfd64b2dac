// What the hub asks an agent for when it opens an access stream: which pod, and for a session
// what to run. The agent validates the header itself (it crosses a process boundary).

/** Tunnel stream purposes of the access service. */
export const ACCESS_SESSION_PURPOSE = "access-session";
export const ACCESS_FORWARD_PURPOSE = "access-forward";
export const ACCESS_FILES_PURPOSE = "access-files";

export interface AccessPodRef {
  /** The pod's namespace inside its cluster (Pod spec.namespace). */
  namespace: string;
  name: string;
  container?: string;
}

export interface AccessSessionRequest extends AccessPodRef {
  /** argv to run; absent: the pod's login shell. */
  command?: string[];
  /** A terminal, as the client's pty-req asked. */
  pty?: { term: string; cols: number; rows: number };
}

export interface AccessForwardRequest extends AccessPodRef {
  port: number;
  /**
   * The agent's byte hop (ADR 0011): carry the forward's bytes from the agent's `rlark-net
   * access-hop` to the hub's SSH front on its TLS data port `port` (the host the agent's tunnel
   * reached), presenting `ticket` there. An agent without the hop serves the stream as before.
   */
  hop?: AccessHopTicket;
}

export interface AccessHopTicket {
  port: number;
  /** 128 random bits, hex: single use, valid seconds. */
  ticket: string;
}

/** A stream header's `hop` (forwards and files), checked; undefined when absent. */
export function parseAccessHop(value: unknown): AccessHopTicket | undefined {
  if (value === undefined) return undefined;
  const hop = value as { port?: unknown; ticket?: unknown } | null;
  const port = Number(hop?.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535 || typeof hop?.ticket !== "string")
    throw new Error("access request: hop must be {port, ticket}");
  if (!/^[0-9a-f]{32}$/.test(hop.ticket)) throw new Error("access request: hop.ticket must be 32 hex digits");
  return { port, ticket: hop.ticket };
}

const MAX_ARGS = 256;
const MAX_ARG_BYTES = 4096;

function text(meta: Record<string, unknown>, key: string, required: boolean): string | undefined {
  const value = meta[key];
  if (value === undefined && !required) return undefined;
  if (typeof value !== "string" || value === "" || value.length > 253) {
    throw new Error(`access request: ${key} must be a non-empty string`);
  }
  return value;
}

function podRef(meta: Record<string, unknown>): AccessPodRef {
  const container = text(meta, "container", false);
  return {
    namespace: text(meta, "namespace", true) as string,
    name: text(meta, "name", true) as string,
    ...(container ? { container } : {}),
  };
}

export function parseAccessSessionRequest(meta: Record<string, unknown>): AccessSessionRequest {
  const request: AccessSessionRequest = podRef(meta);
  if (meta.command !== undefined) {
    const command = meta.command;
    if (
      !Array.isArray(command) ||
      command.length === 0 ||
      command.length > MAX_ARGS ||
      !command.every((a) => typeof a === "string" && a.length <= MAX_ARG_BYTES)
    ) {
      throw new Error("access request: command must be a non-empty list of strings");
    }
    request.command = command as string[];
  }
  if (meta.pty !== undefined) {
    const pty = meta.pty as { term?: unknown; cols?: unknown; rows?: unknown } | null;
    const cols = Number(pty?.cols);
    const rows = Number(pty?.rows);
    const term = typeof pty?.term === "string" && /^[\w.+-]{1,64}$/.test(pty.term) ? pty.term : "xterm";
    request.pty = {
      term,
      cols: Number.isInteger(cols) && cols > 0 ? Math.min(cols, 10_000) : 80,
      rows: Number.isInteger(rows) && rows > 0 ? Math.min(rows, 10_000) : 24,
    };
  }
  return request;
}

export function parseAccessForwardRequest(meta: Record<string, unknown>): AccessForwardRequest {
  const port = Number(meta.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error("access request: port must be an integer from 1 to 65535");
  }
  const hop = parseAccessHop(meta.hop);
  return { ...podRef(meta), port, ...(hop ? { hop } : {}) };
}
