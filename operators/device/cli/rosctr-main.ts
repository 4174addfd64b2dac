// The standalone rosctr (bin/rosctr.js): what the device plugin mounts into pods.

import { runCli } from "./controller-client.ts";
import { buildRosctr } from "./rosctr.ts";

await runCli("rosctr", () => buildRosctr().parseAsync(process.argv));
