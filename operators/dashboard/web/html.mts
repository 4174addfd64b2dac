// A tiny HTML template: interpolations are escaped unless they are already Html.
export class Html {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
  }
}

export type Part = Html | string | number | boolean | null | undefined | readonly Part[];

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function render(part: Part): string {
  if (part === null || part === undefined || part === false || part === true) return "";
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return part.map(render).join("");
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...parts: Part[]): Html {
  let out = strings[0] ?? "";
  for (let i = 0; i < parts.length; i++) out += render(parts[i] as Part) + (strings[i + 1] ?? "");
  return new Html(out);
}
