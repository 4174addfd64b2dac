// The browser code is type-checked on its own, with the DOM library: mixing DOM types into the
// server's program breaks Node's stream types there. `npm test`'s tsc does not see web/*.mts.
import { execFile } from "node:child_process";
import path from "node:path";
import t from "tap";

const root = path.join(import.meta.dirname, "..", "..");

t.test("the dashboard's browser code type-checks against the DOM", async (t) => {
  const result = await new Promise<{ code: number; output: string }>((resolve) => {
    execFile(
      path.join(root, "node_modules", ".bin", "tsc"),
      ["-p", path.join(root, "operators", "dashboard", "web", "tsconfig.json")],
      { cwd: root },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, output: stdout + stderr }),
    );
  });
  t.equal(result.output, "", "no diagnostics");
  t.equal(result.code, 0);
});
