// The session token lives in sessionStorage (seed 000 §15): gone with the tab, never in a cookie.
const KEY = "rlark.session";

export interface Session {
  token: string;
  subject: string;
  role: string;
  expiresAt: string;
}

export function currentSession(): Session | undefined {
  const raw = sessionStorage.getItem(KEY);
  if (!raw) return undefined;
  try {
    const session = JSON.parse(raw) as Session;
    if (Date.parse(session.expiresAt) > Date.now()) return session;
  } catch {}
  sessionStorage.removeItem(KEY);
  return undefined;
}

export function endSession(): void {
  sessionStorage.removeItem(KEY);
}

export type Credentials = { username: string; password: string } | { adminToken: string } | { code: string };

/**
 * Logs in with a name and password, the hub's admin token, or the single-use code of a login link
 * (`rlark up`'s); the error message is for people.
 */
export async function logIn(body: Credentials): Promise<Session> {
  const response = await fetch("code" in body ? "/api/v1/auth/login-link" : "/api/v1/auth/login", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = (await response.json().catch(() => ({}))) as Partial<Session> & { message?: string };
  if (!response.ok || !answer.token) throw new Error(answer.message ?? `login failed (${response.status})`);
  const session = answer as Session;
  sessionStorage.setItem(KEY, JSON.stringify(session));
  return session;
}
