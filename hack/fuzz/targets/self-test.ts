// Targets that fail on purpose, so tests/hack/fuzz.test.ts can show the harness catches each kind
// of failure. They replace the real targets when RLARK_FUZZ_SELF_TEST=1 (targets/index.ts).
import fc from "fast-check";
import { clearly, type FuzzTarget } from "../target.ts";

const kept: number[][] = [];

export const SELF_TEST: FuzzTarget<number>[] = [
  {
    name: "self-test-crash",
    about: "reads a field of undefined on odd inputs",
    input: fc.nat(),
    async run(_n, index) {
      await clearly(() => (index % 2 === 1 ? (undefined as unknown as { x: number }).x : index));
    },
  },
  {
    name: "self-test-hang",
    about: "never returns on input 3",
    input: fc.nat(),
    run(_n, index) {
      if (index === 3) for (;;);
    },
  },
  {
    name: "self-test-leak",
    about: "keeps 4 MB of heap for every input",
    input: fc.nat(),
    run(n) {
      kept.push(new Array(500_000).fill(n));
    },
  },
  {
    name: "self-test-refusal",
    about: "refuses every input with a clear error",
    input: fc.nat(),
    async run(n) {
      await clearly(() => {
        throw new Error(`input ${n} is refused`);
      });
    },
  },
];
