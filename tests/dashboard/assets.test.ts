// The page's modules as the hub serves them, run in Node: the cluster page's quantities are
// parsed by lib/quantity.ts itself (served beside the page), not by a copy of it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import t from "tap";
import { loadAssets } from "../../operators/dashboard/assets.ts";
import { parseQuantity as hubParse } from "../../operators/lib/quantity.ts";

t.test("the page parses quantities with the hub's own lib/quantity.ts, served without types", async (t) => {
  const assets = await loadAssets();
  const shared = assets.get("lib/quantity.ts");
  t.ok(shared, "lib/quantity.ts is served beside the page's files");
  t.match(shared?.type, "text/javascript");
  t.notMatch(shared?.body.toString(), /Record<string, number>/, "its types are stripped");
  const page = assets.get("quantity.mts");
  t.ok(page);

  // The served files laid out as the browser sees them, under one prefix.
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-assets-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, "package.json"), '{"type":"module"}');
  mkdirSync(path.join(dir, "lib"));
  writeFileSync(path.join(dir, "lib", "quantity.ts"), shared?.body ?? "");
  writeFileSync(path.join(dir, "quantity.js"), page?.body ?? "");
  const served = (await import(pathToFileURL(path.join(dir, "quantity.js")).href)) as {
    parseQuantity(value: unknown): number | undefined;
  };

  for (const quantity of ["500m", "2Gi", "8", "1e3", "1.5k", 4]) {
    t.equal(served.parseQuantity(quantity), hubParse(quantity), `${quantity} reads as the hub reads it`);
  }
  // Kubernetes takes an exponent or a suffix, not both; a malformed number is no quantity.
  for (const malformed of ["1e3Gi", "1.2.3", "2 Gi", "", undefined]) {
    t.equal(served.parseQuantity(malformed), undefined, `${String(malformed)} does not parse`);
  }
});
