// The access audit (admins only): who reached which pod, how, when, how much, and how it ended,
// fetched on request from GET /api/v1/access/audit.
import { type Html, html } from "./html.mts";

interface AuditRow {
  actor: string;
  ip?: string;
  verb: string;
  target: string;
  program?: string;
  start: string;
  end: string;
  bytesIn: number;
  bytesOut: number;
  result: string;
  exitCode?: number;
  error?: string;
}

type AuditState =
  | { state: "loading" }
  | { state: "loaded"; rows: AuditRow[] }
  | { state: "failed"; message: string };

let audit: AuditState | undefined;

export function accessPage(): Html {
  const button = html`<button type="button" class="access-audit">${audit ? "refresh" : "load the access audit"}</button>`;
  if (!audit) return html`<h1>Access</h1>${button}`;
  if (audit.state === "loading") return html`<h1>Access</h1>${button} <span class="muted">loading…</span>`;
  if (audit.state === "failed")
    return html`<h1>Access</h1>${button} <span class="muted">${audit.message}</span>`;
  return html`<h1>Access</h1>${button}
    <table>
      <caption>Newest first: shells, commands, files and forwards through the SSH bastion</caption>
      <thead><tr><th>start</th><th>user</th><th>verb</th><th>target</th><th>result</th><th>exit</th><th>bytes in/out</th><th>error</th></tr></thead>
      <tbody>${audit.rows.map(
        (r) =>
          html`<tr><td>${r.start}</td><td>${r.actor}</td><td>${r.verb}${r.program ? ` (${r.program})` : ""}</td><td>${r.target}</td><td>${r.result}</td><td>${r.exitCode === undefined ? "" : String(r.exitCode)}</td><td>${String(r.bytesIn)} / ${String(r.bytesOut)}</td><td>${r.error ?? ""}</td></tr>`,
      )}</tbody>
    </table>`;
}

export async function fetchAccessAudit(token: string, changed: () => void): Promise<void> {
  audit = { state: "loading" };
  changed();
  try {
    const response = await fetch("/api/v1/access/audit?limit=500", {
      headers: { authorization: `Bearer ${token}` },
    });
    const body = (await response.json().catch(() => ({}))) as { items?: AuditRow[]; message?: string };
    audit = response.ok
      ? { state: "loaded", rows: body.items ?? [] }
      : { state: "failed", message: body.message ?? `HTTP ${response.status}` };
  } catch (error) {
    audit = { state: "failed", message: error instanceof Error ? error.message : String(error) };
  }
  changed();
}
