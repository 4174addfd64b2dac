import { type Html, html, type Part } from "./html.mts";

export function phase(value: string | undefined): Html {
  const text = value ?? "Unknown";
  return html`<span class="phase phase-${text.replace(/[^A-Za-z]/g, "")}">${text}</span>`;
}

/**
 * A requested-vs-allocatable bar: a <meter>, so screen readers announce it and the test can read
 * its value. `warn` marks it (disk at ≥ 90 % or under DiskPressure).
 */
export function bar(label: string, used: number, total: number, text: string, warn = false): Html {
  const max = total > 0 ? total : 1;
  return html`<div class="bar${warn ? " warn" : ""}" data-resource="${label}">
    <span class="bar-label">${label}</span>
    <meter aria-label="${label}" min="0" max="${max}" low="${max * 0.75}" high="${max * 0.9}" optimum="0" value="${Math.min(used, max)}"></meter>
    <span class="bar-text">${text}${warn ? html` <strong class="warning">⚠ ${label === "Disk" ? "disk nearly full" : "pressure"}</strong>` : ""}</span>
  </div>`;
}

export function table(headers: readonly string[], rows: readonly Part[], caption?: string): Html {
  return html`<div class="scroll table-box"><table>${caption ? html`<caption>${caption}</caption>` : ""}<thead><tr>${headers.map(
    (h) => html`<th scope="col">${h}</th>`,
  )}</tr></thead><tbody>${rows.length ? rows : html`<tr><td colspan="${headers.length}" class="muted">none</td></tr>`}</tbody></table></div>`;
}

export function conditionsList(
  conditions:
    | readonly {
        type: string;
        status: string;
        reason?: string;
        message?: string;
        lastTransitionTime?: string;
      }[]
    | undefined,
): Html {
  const sorted = [...(conditions ?? [])].sort((a, b) =>
    (a.lastTransitionTime ?? "").localeCompare(b.lastTransitionTime ?? ""),
  );
  if (sorted.length === 0) return html`<p class="muted">no conditions</p>`;
  return html`<ol class="timeline">${sorted.map(
    (c) =>
      html`<li><time>${c.lastTransitionTime ?? ""}</time> <strong>${c.type}</strong>=${c.status}${c.reason ? html` <em>${c.reason}</em>` : ""}${c.message ? html` — ${c.message}` : ""}</li>`,
  )}</ol>`;
}

export function select(name: string, label: string, value: string, options: readonly string[]): Html {
  return html`<label>${label} <select id="filter-${name}" data-filter="${name}"><option value="">all</option>${options.map(
    (o) => html`<option value="${o}" ${o === value ? "selected" : ""}>${o}</option>`,
  )}</select></label>`;
}
