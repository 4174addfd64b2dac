// Pages behind a prefix: an app that believes it is served at `/` (TensorBoard's index.html loads
// its fonts from `url(/font-roboto/…)`) names absolute paths the browser would send to the hub's
// root. HTML and CSS answers are read whole (bounded), decoded, and every root-relative URL in an
// attribute or a CSS url() is moved under the prefix; scripts and data pass untouched (TensorBoard
// builds its XHR paths relative to the page, from its tb-relative-root meta tag).
import type { IncomingHttpHeaders } from "node:http";
import { promisify } from "node:util";
import { brotliDecompress, gunzip, inflate } from "node:zlib";

/** The answers worth rewriting: HTML and CSS. */
export function rewritable(headers: IncomingHttpHeaders): boolean {
  return /^\s*text\/(html|css)\b/i.test(headers["content-type"] ?? "");
}

type Decode = (body: Buffer, options: { maxOutputLength: number }) => Promise<Buffer>;
const DECODE: Record<string, Decode> = {
  gzip: promisify(gunzip) as Decode,
  "x-gzip": promisify(gunzip) as Decode,
  deflate: promisify(inflate) as Decode,
  br: promisify(brotliDecompress) as Decode,
};

/**
 * The body as sent, decoded; throws on an encoding this proxy does not know (the caller answers
 * 502 rather than pass bytes it cannot rewrite). `maxBytes` bounds the decoded size too.
 */
export async function decodeBody(
  body: Buffer,
  encoding: string | undefined,
  maxBytes: number,
): Promise<Buffer> {
  const name = (encoding ?? "identity").trim().toLowerCase();
  if (name === "" || name === "identity") return body;
  const decode = DECODE[name];
  if (!decode) throw new Error(`the pod's ${name} content-encoding cannot be rewritten`);
  // zlib stops at the bound itself: a small bomb never inflates in the hub's memory.
  return decode(body, { maxOutputLength: maxBytes }).catch((error: unknown) => {
    throw error instanceof RangeError
      ? new Error(`the pod's page is over ${maxBytes} bytes decoded`)
      : new Error(`the pod's ${name} page does not decode: ${(error as Error).message}`);
  });
}

// src="/x", href='/x', action=/x (but never //host, a scheme-relative URL to another site).
const ATTRIBUTE = /(\s(?:src|href|action|poster|formaction)\s*=\s*)(["']?)\/(?!\/)/gi;
// url(/x), url("/x"), url('/x') in a stylesheet or a style attribute or element.
const CSS_URL = /(url\(\s*)(["']?)\/(?!\/)/gi;

/** `text` with every root-relative URL moved under `prefix` (which has no trailing slash). */
export function rewriteRootPaths(text: string, prefix: string): string {
  return text
    .replace(ATTRIBUTE, (_all, name: string, quote: string) => `${name}${quote}${prefix}/`)
    .replace(CSS_URL, (_all, open: string, quote: string) => `${open}${quote}${prefix}/`);
}
