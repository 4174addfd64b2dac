// tap "after": this test run is done with the shared fleet; hack/kube/down stops it (exactly the
// processes hack/kube/up recorded) unless another test run in this checkout still uses it; the
// same for the real-node fleet.
// RLARK_FLEET_KEEP=1 keeps its logs and state in .cache/fleet for a post-mortem.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../../../hack/kube/paths.ts";
import { realFleetDir } from "../../helpers/fleet.ts";

const keep = process.env.RLARK_FLEET_KEEP === "1" ? ["--keep"] : [];
// the tap runner is this script's parent, as it is every test file's
const args = [join(repoRoot, "hack/kube/down"), "--holder", String(process.ppid), ...keep];
let status = 0;
// the kwok fleet, then the real-node fleet (tests/e2e/real-nodes/), when a file started it
for (const dir of [undefined, realFleetDir()]) {
  if (dir && !existsSync(join(dir, "state.json"))) continue;
  const env = dir ? { ...process.env, RLARK_FLEET_DIR: dir } : process.env;
  const run = spawnSync("bash", args, { stdio: "inherit", env });
  status ||= run.status ?? 1;
}
process.exit(status);
