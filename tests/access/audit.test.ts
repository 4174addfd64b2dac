// The access audit file: one JSON line per access, rotated by size, newest first for admins.
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { AuditLog, type AuditRecord } from "../../operators/access/index.ts";
import { createHubHttpHandler, hubApiRoutes } from "../../operators/hub/http/api-server.ts";
import { openSqliteStore } from "../../operators/lib/store/index.ts";

const record = (i: number): AuditRecord => ({
  actor: `user${i}`,
  verb: "shell",
  target: "local/agent-local/pod-0",
  via: "ssh",
  start: "2026-01-01T00:00:00.000Z",
  end: "2026-01-01T00:00:01.000Z",
  bytesIn: i,
  bytesOut: 0,
  result: "ok",
});

t.test("records rotate by size and the newest come first", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-audit-"));
  const audit = new AuditLog({ path: path.join(dir, "access.jsonl"), maxBytes: 1000, keep: 2 });
  for (let i = 0; i < 30; i++) audit.write(record(i));
  t.ok(existsSync(`${audit.path}.1`) && existsSync(`${audit.path}.2`), "rotated");
  t.notOk(existsSync(`${audit.path}.3`), "only `keep` old files");
  t.ok(readFileSync(audit.path).length <= 1000);
  const recent = audit.recent(3);
  t.same(
    recent.map((r) => r.actor),
    ["user29", "user28", "user27"],
  );
  audit.write({ ...record(99), error: "x".repeat(5000) });
  t.equal(audit.recent(1)[0]?.error?.length, 500, "errors are cut");
});

t.test("GET /api/v1/access/audit is for admins only", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-audit-"));
  const store = openSqliteStore({ dataDir: dir });
  t.teardown(() => store.close());
  const audit = new AuditLog({ path: path.join(dir, "access.jsonl") });
  audit.write(record(1));
  const server = createServer(
    createHubHttpHandler({
      authenticate: (token) =>
        token === "admin"
          ? { subject: "a", role: "admin" }
          : token === "viewer"
            ? { subject: "v", role: "viewer" }
            : undefined,
      routes: hubApiRoutes({
        store,
        sourceStatus: () => ({}),
        metricsText: () => "",
        ready: () => ({ ready: true, message: "" }),
        accessAudit: (limit) => audit.recent(limit),
      }),
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/access/audit`;
  const as = (token?: string) => fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  t.equal((await as()).status, 401);
  t.equal((await as("viewer")).status, 403);
  const admin = await as("admin");
  t.equal(admin.status, 200);
  t.same(
    ((await admin.json()) as { items: AuditRecord[] }).items.map((r) => r.actor),
    ["user1"],
  );
});
