// tap "before": stops a fleet left behind by a crashed test run (all its holders gone). The fleet
// itself starts on first use (tests/helpers/fleet.ts), so runs without e2e files never pay for it;
// RLARK_FLEET_EAGER=1 starts it here instead, before any test file.
// RLARK_FLEET_CLUSTERS / RLARK_FLEET_NODES change its shape (default 2 clusters x 3 nodes).
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { repoRoot } from "../../../hack/kube/paths.ts";
import { fleetShape, realFleetDir } from "../../helpers/fleet.ts";

const script = (name: string): string => join(repoRoot, "hack/kube", name);
const steps: { args: string[]; env?: NodeJS.ProcessEnv }[] = [
  { args: [script("down"), "--if-orphaned"] },
  // the real-node fleet (tests/e2e/real-nodes/) starts only on use; a crashed run's is stopped here
  { args: [script("down"), "--if-orphaned"], env: { ...process.env, RLARK_FLEET_DIR: realFleetDir() } },
];
// the tap runner is this script's parent, as it is every test file's
if (process.env.RLARK_FLEET_EAGER === "1")
  steps.push({ args: [script("up"), ...fleetShape(), "--holder", String(process.ppid)] });
for (const { args, env } of steps) {
  const run = spawnSync("bash", args, { stdio: "inherit", env: env ?? process.env });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
