// The web terminal tab of a pod (#/terminal/<namespace>/<pod>): xterm.js, served by the hub from
// its npm package, on a WebSocket to the hub's terminal route (operators/access/terminal). The
// page says how the session ended: the program's exit status, or a broken connection (revoked in
// git, idle, the agent or the hub gone), which is never shown as an exit status.
import { type Html, html } from "./html.mts";

const TERMINAL_PROTOCOL = "rlark.terminal.v1";
const TOKEN_PROTOCOL = "rlark.token.";

type Xterm = typeof import("@xterm/xterm");
type Fit = typeof import("@xterm/addon-fit");

interface Mounted {
  key: string;
  close(): void;
}

let mounted: Mounted | undefined;

/** The page's fixed frame; the terminal is mounted into it once (re-renders leave it alone). */
export function terminalPage(namespace: string, pod: string): Html {
  return html`<section class="terminal-page" aria-label="Terminal of ${pod}">
  <h1>Terminal · <span id="terminal-pod">${pod}</span></h1>
  <p class="muted">${namespace} · a shell in the pod, as <code>ssh user+pod@hub</code> opens it; what you type is audited as an access, never recorded.</p>
  <p id="terminal-status" role="status" aria-live="polite">connecting…</p>
  <div id="terminal" class="terminal"></div>
  </section>`;
}

function status(text: string, kind: "live" | "exit" | "error"): void {
  const element = document.getElementById("terminal-status");
  if (!element) return;
  element.textContent = text;
  element.className = kind;
  element.dataset.state = kind;
}

/** Ends the terminal when the page moves elsewhere. */
export function unmountTerminal(): void {
  mounted?.close();
  mounted = undefined;
}

/** Opens the terminal into the page's frame, unless it is already open for this pod. */
export async function mountTerminal(namespace: string, pod: string, token: string): Promise<void> {
  const key = `${namespace}/${pod}`;
  const container = document.getElementById("terminal");
  if (!container || mounted?.key === key) return;
  unmountTerminal();
  let closed = false;
  const mine: Mounted = { key, close: () => (closed = true) };
  mounted = mine;
  const [{ Terminal }, { FitAddon }] = await Promise.all([
    import(new URL("./xterm.mjs", import.meta.url).href) as Promise<Xterm>,
    import(new URL("./addon-fit.mjs", import.meta.url).href) as Promise<Fit>,
  ]);
  if (closed) return;
  const term = new Terminal({ cursorBlink: true, scrollback: 5000, convertEol: false });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(container);
  fit.fit();
  const where = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}`;
  const url = `${where}/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod)}/terminal?cols=${term.cols}&rows=${term.rows}`;
  const socket = new WebSocket(url, [TERMINAL_PROTOCOL, `${TOKEN_PROTOCOL}${token}`]);
  socket.binaryType = "arraybuffer";
  let ended = false;
  let opened = false;
  const encoder = new TextEncoder();
  socket.onopen = () => {
    opened = true;
    status("connected", "live");
    term.focus();
  };
  socket.onmessage = (event: MessageEvent) => {
    if (event.data instanceof ArrayBuffer) {
      term.write(new Uint8Array(event.data));
      return;
    }
    const message = JSON.parse(String(event.data)) as {
      type: string;
      code?: number;
      signal?: string;
      message?: string;
    };
    ended = true;
    if (message.type === "exit")
      status(
        message.signal
          ? `the program was killed by SIG${message.signal}`
          : `exited with code ${message.code}`,
        "exit",
      );
    else status(`connection lost: ${message.message ?? "the session broke"}`, "error");
  };
  socket.onclose = (event: CloseEvent) => {
    // Refused before the upgrade (a browser is not told why), or cut without a word (the hub
    // gone): neither is an exit status.
    if (!opened)
      status(
        "refused by the hub: no shell grant on this pod, the pod gone, or too many open sessions",
        "error",
      );
    else if (!ended)
      status(`connection lost${event.reason ? `: ${event.reason}` : ` (code ${event.code})`}`, "error");
    ended = true;
  };
  term.onData((data: string) => {
    if (socket.readyState === WebSocket.OPEN) socket.send(encoder.encode(data));
  });
  term.onResize(({ cols, rows }: { cols: number; rows: number }) => {
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "resize", cols, rows }));
  });
  const onWindowResize = () => fit.fit();
  window.addEventListener("resize", onWindowResize);
  mine.close = () => {
    closed = true;
    window.removeEventListener("resize", onWindowResize);
    socket.close();
    term.dispose();
  };
}
