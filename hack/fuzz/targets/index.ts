// The targets a run takes: the product's, or the harness's own self-test targets when
// RLARK_FUZZ_SELF_TEST=1 (tests/hack/fuzz.test.ts). Loaded on demand, so a self-test worker does
// not load the product's parsers.
import type { FuzzTarget } from "../target.ts";

export const TARGETS: FuzzTarget[] =
  process.env.RLARK_FUZZ_SELF_TEST === "1"
    ? ((await import("./self-test.ts")).SELF_TEST as FuzzTarget[])
    : (await import("./product.ts")).PRODUCT;
