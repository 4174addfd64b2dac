// The browser code ships as TypeScript source in web/ and is served as JavaScript with its types
// stripped (node:module's stripTypeScriptTypes, the same erasure Node applies to the server), so
// there is no build step, no bundle to keep fresh and nothing fetched from a CDN. Every file is
// served under /assets/<content hash>/, so it can be cached forever; index.html is never cached.
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import type { ServerResponse } from "node:http";
import { createRequire, stripTypeScriptTypes } from "node:module";
import path from "node:path";

export const WEB_DIR = path.join(import.meta.dirname, "web");

interface Asset {
  body: Buffer;
  type: string;
}

export interface Assets {
  /** /assets/<hash>/ */
  prefix: string;
  index: Buffer;
  get(name: string): Asset | undefined;
}

const TYPES: Record<string, string> = {
  ".mts": "text/javascript; charset=utf-8",
  ".ts": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
};

/**
 * The web terminal's xterm.js, served from the installed npm packages as they ship (ES modules and
 * a stylesheet) beside the page's own files. The image keeps these packages whole
 * (hack/images/bundle-deps.ts).
 */
const VENDOR: Record<string, string> = {
  "xterm.mjs": "@xterm/xterm/lib/xterm.mjs",
  "xterm.css": "@xterm/xterm/css/xterm.css",
  "addon-fit.mjs": "@xterm/addon-fit/lib/addon-fit.mjs",
};

/**
 * Modules of operators/ the page imports as they are, so the browser runs the hub's own code
 * rather than a copy: served as `<path>.ts` beside the page's files, which import them as
 * `./<path>.ts` (web/tsconfig.json's rootDirs resolves that against operators/ for tsc). In the
 * npm package the module is dist/<path>.js, already JavaScript. Plain modules only: no imports.
 */
const SHARED = ["lib/quantity"];
/** `.ts` in a checkout, `.js` in the npm package's dist/. */
const OWN_EXTENSION = path.extname(import.meta.filename);

function vendorFile(specifier: string): string {
  const [scope, name, ...rest] = specifier.split("/");
  const manifest = createRequire(import.meta.url).resolve(`${scope}/${name}/package.json`);
  return path.join(path.dirname(manifest), ...rest);
}

export async function loadAssets(dir = WEB_DIR): Promise<Assets> {
  const files = new Map<string, Asset>();
  const hash = createHash("sha256");
  const sources: [string, string][] = [];
  for (const name of (await readdir(dir)).sort()) {
    if (TYPES[path.extname(name)]) sources.push([name, path.join(dir, name)]);
  }
  for (const [name, specifier] of Object.entries(VENDOR)) sources.push([name, vendorFile(specifier)]);
  for (const shared of SHARED) {
    sources.push([`${shared}.ts`, path.join(import.meta.dirname, "..", `${shared}${OWN_EXTENSION}`)]);
  }
  for (const [name, file] of sources) {
    const type = TYPES[path.extname(name)] as string;
    const source = await readFile(file, "utf8");
    // The source maps are not served: a browser would ask for them in vain.
    const text = /\.m?ts$/.test(name)
      ? stripTypes(source)
      : source.replace(/\n\/[/*]# sourceMappingURL=\S+(?: \*\/)?\s*$/, "\n");
    hash.update(name).update("\0").update(text);
    files.set(name, { body: Buffer.from(text), type });
  }
  const prefix = `/assets/${hash.digest("hex").slice(0, 16)}/`;
  const index = Buffer.from(
    (await readFile(path.join(dir, "index.html"), "utf8")).replaceAll("%ASSETS%/", prefix),
  );
  return { prefix, index, get: (name) => files.get(name) };
}

function stripTypes(source: string): string {
  // The warning that the function is experimental would otherwise reach every hub's stderr.
  const emit = process.emitWarning;
  process.emitWarning = () => {};
  try {
    return stripTypeScriptTypes(source, { mode: "strip" });
  } finally {
    process.emitWarning = emit;
  }
}

const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
};

export function serveIndex(assets: Assets, res: ServerResponse, head: boolean): void {
  res.writeHead(200, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-cache",
    ...SECURITY_HEADERS,
  });
  res.end(head ? undefined : assets.index);
}

/**
 * The icon at the address browsers ask for without being told (and without a token): the page
 * links the hashed one, but a 401 here would be a console error on every page.
 */
export function serveFavicon(assets: Assets, res: ServerResponse, head: boolean): void {
  const icon = assets.get("favicon.svg");
  res.writeHead(icon ? 200 : 404, {
    "content-type": icon ? icon.type : "text/plain; charset=utf-8",
    "cache-control": "public, max-age=86400",
    ...SECURITY_HEADERS,
  });
  res.end(head || !icon ? undefined : icon.body);
}

/** True when the path is under /assets/ (answered, 404 included). */
export function serveAsset(assets: Assets, pathname: string, res: ServerResponse, head: boolean): boolean {
  if (!pathname.startsWith("/assets/")) return false;
  const asset = pathname.startsWith(assets.prefix)
    ? assets.get(pathname.slice(assets.prefix.length))
    : undefined;
  if (!asset) {
    // An old page asking for the assets of a previous hub version: a reload fetches the new ones.
    res.writeHead(404, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" });
    res.end("no such asset\n");
    return true;
  }
  res.writeHead(200, {
    "content-type": asset.type,
    "content-length": asset.body.length,
    "cache-control": "public, max-age=31536000, immutable",
    ...SECURITY_HEADERS,
  });
  res.end(head ? undefined : asset.body);
  return true;
}
