// The applier's loop (apply-loop.ts) behind a face of its own: the store's cache and the
// nodeserver use it, and the controller runtime's index would load the store with it (a cycle
// for the store, and the whole runtime for a nodeserver that needs one loop).
export { ApplyLoop, type ApplyLoopOptions, type RunResult } from "./apply-loop.ts";
