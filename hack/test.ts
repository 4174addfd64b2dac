// `npm test`: every check a change must pass, in order, with progress lines.
// Stops at the first failing step and exits with its code so CI is gated on it.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

interface Step {
  name: string;
  command: string[];
  /** Skip the step when this file is absent (a later issue adds it). */
  needs?: string;
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
  { name: "Kubernetes binaries", command: ["bash", "hack/kube/build"], needs: "hack/kube/build" },
  { name: "helm and kustomize", command: ["bash", "hack/tools/build"], needs: "hack/tools/build" },
  { name: "tests (tap)", command: ["npx", "tap", ...process.argv.slice(2)] },
];

const started = Date.now();
for (const [index, step] of steps.entries()) {
  if (step.needs && !existsSync(step.needs)) continue;
  const t0 = Date.now();
  console.log(`\n== [${index + 1}/${steps.length}] ${step.name}`);
  const [cmd, ...args] = step.command as [string, ...string[]];
  const run = spawnSync(cmd, args, { stdio: "inherit" });
  const seconds = ((Date.now() - t0) / 1000).toFixed(1);
  if (run.status !== 0) {
    console.error(`== ${step.name}: FAILED after ${seconds}s (exit ${run.status ?? run.signal})`);
    process.exit(run.status ?? 1);
  }
  console.log(`== ${step.name}: ok in ${seconds}s`);
}
console.log(`\n== all checks passed in ${((Date.now() - started) / 1000).toFixed(0)}s`);
