// The query of GET …/pods/<name>/log, named as Kubernetes names them (kubectl's flags map onto
// them one to one), checked before anything is opened: a bad value is a 400 naming the field.

export interface LogQuery {
  tail: number;
  follow: boolean;
  limitBytes?: number;
  sinceSeconds?: number;
  previous: boolean;
  timestamps: boolean;
  container?: string;
}

/** Lines a request gets when it names no tail; at most MAX_TAIL_LINES. */
export const DEFAULT_TAIL_LINES = 100;
export const MAX_TAIL_LINES = 10_000;
/** Bytes a snapshot returns at most whatever limitBytes says (a follow is bounded by its reader). */
export const MAX_SNAPSHOT_BYTES = 16 * 1024 * 1024;

export class LogQueryError extends Error {}

function integer(params: URLSearchParams, field: string, min: number): number | undefined {
  const raw = params.get(field);
  if (raw === null) return undefined;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min)
    throw new LogQueryError(`${field} must be an integer ≥ ${min}, not ${JSON.stringify(raw.slice(0, 40))}`);
  return value;
}

function flag(params: URLSearchParams, field: string): boolean {
  const raw = params.get(field);
  if (raw === null || raw === "false" || raw === "0") return false;
  if (raw === "" || raw === "true" || raw === "1") return true;
  throw new LogQueryError(`${field} must be true or false, not ${JSON.stringify(raw.slice(0, 40))}`);
}

/** `now` turns sinceTime into seconds, so the agent gets one form. */
export function parseLogQuery(params: URLSearchParams, now: number): LogQuery {
  const tailLines = integer(params, "tailLines", 1);
  const tail = tailLines ?? integer(params, "tail", 1) ?? DEFAULT_TAIL_LINES;
  if (tail > MAX_TAIL_LINES)
    throw new LogQueryError(
      `tail must be at most ${MAX_TAIL_LINES} lines; use limitBytes or follow for more`,
    );
  const follow = flag(params, "follow");
  const limit = integer(params, "limitBytes", 1);
  const limitBytes = follow ? limit : Math.min(limit ?? MAX_SNAPSHOT_BYTES, MAX_SNAPSHOT_BYTES);
  let sinceSeconds = integer(params, "sinceSeconds", 1);
  const sinceTime = params.get("sinceTime");
  if (sinceTime !== null) {
    if (sinceSeconds !== undefined) throw new LogQueryError("give sinceSeconds or sinceTime, not both");
    const at = Date.parse(sinceTime);
    if (Number.isNaN(at))
      throw new LogQueryError(
        `sinceTime must be an RFC 3339 time, not ${JSON.stringify(sinceTime.slice(0, 40))}`,
      );
    sinceSeconds = Math.max(1, Math.ceil((now - at) / 1000));
  }
  const container = params.get("container") ?? undefined;
  if (container !== undefined && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(container))
    throw new LogQueryError(
      `container must be a container name (DNS label), not ${JSON.stringify(container.slice(0, 70))}`,
    );
  return {
    tail,
    follow,
    ...(limitBytes === undefined ? {} : { limitBytes }),
    ...(sinceSeconds === undefined ? {} : { sinceSeconds }),
    previous: flag(params, "previous"),
    timestamps: flag(params, "timestamps"),
    ...(container === undefined ? {} : { container }),
  };
}
