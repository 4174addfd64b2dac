// The plan's golden files: a plan rendered as Markdown, text and JSON must match, byte for byte,
// the files under tests/fixtures/plan/golden. RLARK_UPDATE_GOLDEN=1 rewrites them after a
// deliberate change; they end in .golden so formatters leave them as rendered.
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Test } from "tap";
import {
  type Plan,
  renderPlanJson,
  renderPlanMarkdown,
  renderPlanText,
} from "../../operators/feedback/plan/index.ts";

const golden = join(import.meta.dirname, "../fixtures/plan/golden");

async function matchGolden(t: Test, name: string, actual: string): Promise<void> {
  const file = join(golden, name);
  if (process.env.RLARK_UPDATE_GOLDEN === "1") await writeFile(file, actual);
  t.equal(actual, await readFile(file, "utf8"), `${name} matches its golden file`);
}

/**
 * Plans twice (the two must be equal), then checks the renderings against `<prefix>.md.golden`,
 * `<prefix>.txt.golden` and `<prefix>.json.golden`.
 */
export async function matchPlanGoldens(
  t: Test,
  plan: () => Promise<Plan>,
  prefix: string,
  markdown?: Parameters<typeof renderPlanMarkdown>[1],
): Promise<void> {
  const first = await plan();
  t.same(first, await plan(), "deterministic");
  await matchGolden(t, `${prefix}.md.golden`, renderPlanMarkdown(first, markdown));
  await matchGolden(t, `${prefix}.txt.golden`, renderPlanText(first));
  await matchGolden(t, `${prefix}.json.golden`, renderPlanJson(first));
}
