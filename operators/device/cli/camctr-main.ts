// The standalone camctr (bin/camctr.js): what the device plugin mounts into pods.
import { buildCamctr } from "./camctr.ts";
import { runCli } from "./controller-client.ts";

await runCli("camctr", () => buildCamctr().parseAsync(process.argv));
