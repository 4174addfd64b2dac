// `npm test`: every check a change must pass, in order, with progress lines.
// Stops at the first failing step and exits with its code so CI is gated on it. The last line is
// always `N passed, N failed` (tap's count of tests; a failed check before tap counts as one
// failure), which CI reads whatever the runner.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { FailureDigest } from "./test-failures.ts";

interface Step {
  name: string;
  command: string[];
  /** Skip the step when this file is absent (a later issue adds it). */
  needs?: string;
  /** Read the test counts from the step's output (tap's closing `# { total, pass, fail }`). */
  counts?: boolean;
}

const steps: Step[] = [
  { name: "tap plugins", command: ["npx", "tap", "build"] },
  { name: "lint and format (biome)", command: ["npx", "biome", "check", "."] },
  {
    name: "generated files are fresh",
    command: ["node", "hack/codegen/check.ts"],
    needs: "hack/codegen/check.ts",
  },
  { name: "typecheck (tsc)", command: ["npx", "tsc", "-p", "tsconfig.json"] },
  {
    // kubelet too: tests/e2e/real-nodes/ starts real nodes
    name: "Kubernetes binaries",
    command: ["bash", "hack/kube/build", "--kubelet"],
    needs: "hack/kube/build",
  },
  {
    name: "helm, kustomize and TensorBoard",
    command: ["bash", "hack/tools/build"],
    needs: "hack/tools/build",
  },
  {
    // the package test installs rlark on the oldest Node it supports, from the npm cache
    name: "Node.js 22 in the npm cache",
    command: ["npx", "--yes", "--package", "node@22", "node", "--version"],
  },
  { name: "tests (tap)", command: ["npx", "tap", ...process.argv.slice(2)], counts: true },
];

/** Runs one step with its output passed through; returns its exit code and tap's counts if asked. */
function run(
  step: Step,
): Promise<{ code: number; passed?: number; failed?: number; digest?: FailureDigest }> {
  const [cmd, ...args] = step.command as [string, ...string[]];
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ["inherit", step.counts ? "pipe" : "inherit", "inherit"] });
    let tail = "";
    let passed: number | undefined;
    let failed: number | undefined;
    const digest = new FailureDigest();
    child.stdout?.on("data", (chunk: Buffer) => {
      process.stdout.write(chunk);
      // Only whole lines are matched; the partial last line waits for the next chunk.
      const lines = (tail + chunk.toString("utf8")).split("\n");
      tail = lines.pop() ?? "";
      for (const line of lines) {
        digest.line(line);
        const summary = /^# \{ total: (\d+)(?:, pass: (\d+))?(?:, fail: (\d+))?/.exec(line);
        if (summary) {
          passed = Number(summary[2] ?? 0);
          failed = Number(summary[3] ?? 0);
        }
      }
    });
    child.once("error", () => resolve({ code: 127 }));
    child.once("close", (code, signal) =>
      resolve({ code: code ?? (signal ? 1 : 0), passed, failed, digest }),
    );
  });
}

const started = Date.now();
let passed = 0;
let failed = 0;
for (const [index, step] of steps.entries()) {
  if (step.needs && !existsSync(step.needs)) continue;
  const t0 = Date.now();
  console.log(`\n== [${index + 1}/${steps.length}] ${step.name}`);
  const result = await run(step);
  passed += result.passed ?? 0;
  failed += result.failed ?? 0;
  const seconds = ((Date.now() - t0) / 1000).toFixed(1);
  if (result.code !== 0) {
    console.error(`== ${step.name}: FAILED after ${seconds}s (exit ${result.code})`);
    if (result.failed === undefined || result.failed === 0) failed += 1;
    for (const line of result.digest?.summary() ?? []) console.log(line);
    console.log(`${passed} passed, ${failed} failed`);
    process.exit(result.code);
  }
  console.log(`== ${step.name}: ok in ${seconds}s`);
}
console.log(`\n== all checks passed in ${((Date.now() - started) / 1000).toFixed(0)}s`);
console.log(`${passed} passed, ${failed} failed`);
