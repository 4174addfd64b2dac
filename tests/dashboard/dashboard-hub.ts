// A real hub on a real git repository seeded from examples/, with the dashboard mounted by the
// hub (its `dashboard` option), as `rlark hub --dashboard` mounts it.
import { mkdtemp, readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Test } from "tap";
import { hashPassword } from "../../operators/dashboard/auth/index.ts";
import type { Dashboard } from "../../operators/dashboard/index.ts";
import { type Hub, startHub } from "../../operators/hub/hub.ts";
import { createGitServer, type GitServer } from "../helpers/git-server.ts";
import { hubOptions } from "../helpers/hub-on-git.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const EXAMPLES = path.join(import.meta.dirname, "..", "..", "examples");

/** Every file of examples/ except the invalid ones, as git.commit() takes them. */
export async function exampleFiles(): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(EXAMPLES, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    const relative = path.relative(EXAMPLES, full);
    if (relative.startsWith("invalid")) continue;
    files[relative] = await readFile(full, "utf8");
  }
  return files;
}

/** Cheap scrypt parameters: the tests hash passwords often. */
export const FAST = { ln: 10, r: 8, p: 1 };

/** A git server of the test's own holding examples/ and the User carol ("correct horse"), and `extra`. */
export async function exampleRepository(t: Test, extra: Record<string, string> = {}): Promise<GitServer> {
  const git = await createGitServer();
  t.teardown(() => git.close());
  await git.commit({
    ...(await exampleFiles()),
    "users/carol.yaml": userYaml("carol", "user", await hashPassword("correct horse", FAST)),
    ...extra,
  });
  return git;
}

export function userYaml(name: string, role: string, passwordHash: string): string {
  return `apiVersion: rlinf.io/v1alpha1\nkind: User\nmetadata:\n  name: ${name}\nspec:\n  roles: [${role}]\n  passwordHash: "${passwordHash}"\n`;
}

/** Waits until the hub's source reports the example repository applied (Synced). */
export async function synced(hub: { url: string; adminToken: string }) {
  await waitFor(
    "the example repo applied",
    async () => {
      const r = await fetch(`${hub.url}/api/v1/source`, {
        headers: { authorization: `Bearer ${hub.adminToken}` },
      });
      return ((await r.json()) as { state: string }).state === "Synced";
    },
    onRealServers,
  );
}

export interface DashboardHub {
  hub: Hub;
  dashboard: Dashboard;
  dataDir: string;
  /** Stops the hub and the dashboard and starts both again on the same address and data dir. */
  restart(): Promise<void>;
}

export interface DashboardHubOptions {
  repoUrl?: string;
  loginLimit?: { max: number; windowMs: number; maxPerUser?: number };
  sessionTtlSeconds?: number;
  streamLimits?: { perPrincipal?: number; total?: number; maxPendingBytes?: number };
}

async function start(git: GitServer, dataDir: string, http: string, options: DashboardHubOptions) {
  const hub = await startHub(
    hubOptions(git, dataDir, {
      http,
      // The tests write what controllers and agents would, so nothing else may write it meanwhile.
      controllers: () => [],
      dashboard: {
        ...(options.repoUrl ? { repoUrl: options.repoUrl } : {}),
        ...(options.loginLimit ? { loginLimit: options.loginLimit } : {}),
        ...(options.sessionTtlSeconds ? { sessionTtlSeconds: options.sessionTtlSeconds } : {}),
        sourcePollMs: 100,
        ...(options.streamLimits ? { streamLimits: options.streamLimits } : {}),
      },
    }),
  );
  if (!hub.dashboard) throw new Error("the hub mounted no dashboard");
  return { hub, dashboard: hub.dashboard };
}

export async function startDashboardHub(
  t: Test,
  git: GitServer,
  options: DashboardHubOptions = {},
): Promise<DashboardHub> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "rlark-dash-"));
  const first = await start(git, dataDir, "127.0.0.1:0", options);
  const running: DashboardHub = {
    ...first,
    dataDir,
    async restart() {
      const address = new URL(running.hub.url).host;
      await running.hub.stop();
      Object.assign(running, await start(git, dataDir, address, options));
    },
  };
  t.teardown(async () => {
    await running.hub.stop();
  });
  return running;
}

export async function login(
  hub: Hub,
  body: Record<string, unknown>,
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const response = await fetch(`${hub.url}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
}

export interface SseMessage {
  id?: string;
  event: string;
  data: string;
}

/** A server-sent event stream read with fetch, message by message. */
export class SseClient {
  readonly status: number;
  readonly messages: SseMessage[] = [];
  /** True once the server ended the stream. */
  ended = false;
  #controller: AbortController;
  #done: Promise<void>;

  constructor(status: number, body: ReadableStream<Uint8Array> | null, controller: AbortController) {
    this.status = status;
    this.#controller = controller;
    this.#done = this.#read(body);
  }

  async #read(body: ReadableStream<Uint8Array> | null): Promise<void> {
    if (!body) return;
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of body) {
        buffer += decoder.decode(chunk, { stream: true });
        let end = buffer.indexOf("\n\n");
        while (end !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const message: SseMessage = { event: "message", data: "" };
          const data: string[] = [];
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) continue;
            const colon = line.indexOf(":");
            const field = colon === -1 ? line : line.slice(0, colon);
            const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
            if (field === "id") message.id = value;
            else if (field === "event") message.event = value;
            else if (field === "data") data.push(value);
          }
          message.data = data.join("\n");
          if (data.length || message.event !== "message") this.messages.push(message);
          end = buffer.indexOf("\n\n");
        }
      }
      this.ended = true;
    } catch {
      // aborted
    }
  }

  find(predicate: (m: SseMessage) => boolean): SseMessage | undefined {
    return this.messages.find(predicate);
  }

  close(): Promise<void> {
    this.#controller.abort();
    return this.#done;
  }
}

export async function openEvents(
  hub: Hub,
  query: string,
  headers: Record<string, string> = {},
): Promise<SseClient> {
  const controller = new AbortController();
  const response = await fetch(`${hub.url}/api/v1/events${query}`, { headers, signal: controller.signal });
  return new SseClient(response.status, response.body, controller);
}
