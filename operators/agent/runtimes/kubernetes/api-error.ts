// Failed Kubernetes API calls in one line. The client's ApiException puts the status code, the
// whole response body and every response header in its message; that is what a user saw when a
// write failed. Everything the kubernetes runtime logs or throws goes through here instead:
// "<what>: <code> <reason>: <the API server's Status message>".

interface StatusBody {
  message?: unknown;
  reason?: unknown;
}

/** The HTTP status of a failed call (ApiException.code, or a watch's statusCode), if any. */
export function apiErrorCode(err: unknown): number | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const e = err as { code?: unknown; statusCode?: unknown };
  if (typeof e.code === "number") return e.code;
  if (typeof e.statusCode === "number") return e.statusCode;
  return undefined;
}

function statusOf(body: unknown): StatusBody | undefined {
  if (typeof body === "object" && body !== null) return body as StatusBody;
  if (typeof body !== "string") return undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === "object" && parsed !== null ? (parsed as StatusBody) : undefined;
  } catch {
    return undefined;
  }
}

/** Control characters and runs of whitespace collapse, so the line stays one line. */
const oneLine = (s: string, max = 500): string => {
  const flat = s.replace(/[\p{Cc}\s]+/gu, " ").trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
};

/**
 * One line for `err`: the status code, the Status reason and message when the API server sent
 * one, else the error's own message (without the client's body and header dump); `what` names
 * the object or call, e.g. "Secret rlark-system/rlark-agent-identity".
 */
export function describeApiError(err: unknown, what?: string): string {
  const code = apiErrorCode(err);
  let detail: string;
  if (code !== undefined && typeof err === "object" && err !== null && "body" in err) {
    const status = statusOf((err as { body?: unknown }).body);
    const reason = typeof status?.reason === "string" ? ` ${status.reason}` : "";
    // without a Status (a 401 has no body) the client's "Message:" line is all there is
    const text =
      typeof status?.message === "string"
        ? status.message
        : err instanceof Error
          ? /^Message: (.*)$/m.exec(err.message)?.[1]
          : undefined;
    detail = `${code}${reason}${text ? `: ${oneLine(text)}` : ""}`;
  } else if (err instanceof Error) {
    // the client's own messages start "HTTP-Code: …" and go on with body and headers: first line only
    detail = oneLine(err.message.split("\n")[0] ?? "");
    const cause = (err as { cause?: unknown }).cause;
    if (cause instanceof Error && cause.message) detail += ` (${oneLine(cause.message)})`;
  } else {
    detail = oneLine(String(err));
  }
  return what ? `${what}: ${detail}` : detail;
}

/** An Error carrying the one-line description and the status code, for callers that throw on. */
export class KubeApiError extends Error {
  readonly code: number | undefined;
  constructor(err: unknown, what?: string) {
    super(describeApiError(err, what));
    this.name = "KubeApiError";
    this.code = apiErrorCode(err);
  }
}
