// tap "after": this test run is done with the shared fleet; hack/kube/down stops it (exactly the
// processes hack/kube/up recorded) unless another test run in this checkout still uses it.
// RLARK_FLEET_KEEP=1 keeps its logs and state in .cache/fleet for a post-mortem.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { repoRoot } from "../../../hack/kube/paths.ts";

const keep = process.env.RLARK_FLEET_KEEP === "1" ? ["--keep"] : [];
// the tap runner is this script's parent, as it is every test file's
const args = [join(repoRoot, "hack/kube/down"), "--holder", String(process.ppid), ...keep];
const run = spawnSync("bash", args, { stdio: "inherit" });
process.exit(run.status ?? 1);
