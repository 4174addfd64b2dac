// The CLIs of the device controllers: `rosctr` and `camctr` (bin/rosctr.js, bin/camctr.js), also
// reachable as `rlark rosctr` and `rlark camctr`.
export { buildCamctr } from "./camctr.ts";
export { installClis } from "./install-clis.ts";
export { buildRosctr } from "./rosctr.ts";
