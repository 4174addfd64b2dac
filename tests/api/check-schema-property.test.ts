import fc from "fast-check";
import t from "tap";
import { checkSchema, kinds } from "../../operators/api/index.ts";
import { seedObjects } from "./helpers.ts";

const RULE = /^(schema|kubernetes)\/[a-z-]+$/;

function isWellFormed(violation: { path: string; rule: string; message: string }): boolean {
  return (
    (violation.path === "" || violation.path.startsWith("/")) &&
    RULE.test(violation.rule) &&
    violation.message.length > 0 &&
    !violation.message.includes("undefined")
  );
}

const json = fc.jsonValue({ maxDepth: 6 });

t.test("random JSON never makes checkSchema throw, and every violation is well formed", async (t) => {
  fc.assert(
    fc.property(json, (value) => {
      const violations = checkSchema(value as Record<string, unknown>);
      // No random value is a valid object: it would need a known kind and metadata.name.
      return violations.length > 0 && violations.every(isWellFormed);
    }),
    { numRuns: 500 },
  );
  t.pass("500 random values");
});

t.test(
  "random bodies of every known kind never throw and are never accepted without their required fields",
  async (t) => {
    const body = fc.record(
      {
        apiVersion: fc.constantFrom("rlinf.io/v1alpha1", "v1", 3),
        kind: fc.constantFrom(...kinds.map((k) => k.kind)),
        metadata: fc.oneof(json, fc.record({ name: fc.string(), namespace: fc.string(), labels: json })),
        spec: json,
        status: json,
      },
      { requiredKeys: ["kind"] },
    );
    fc.assert(
      fc.property(body, (doc) => {
        const violations = checkSchema(doc as Record<string, unknown>);
        if (!violations.every(isWellFormed)) return false;
        // Without metadata no kind is valid.
        return doc.metadata !== undefined || violations.length > 0;
      }),
      { numRuns: 1000 },
    );
    t.pass("1000 random bodies");
  },
);

/** Replaces the value at a random place in a valid object with random JSON. */
function mutate(doc: unknown, path: number[], replacement: unknown): unknown {
  if (path.length === 0 || doc === null || typeof doc !== "object") return replacement;
  const entries = Array.isArray(doc) ? doc.map((v, i) => [String(i), v] as const) : Object.entries(doc);
  if (entries.length === 0) return replacement;
  const index = path[0]! % entries.length;
  const copy: Record<string, unknown> | unknown[] = Array.isArray(doc) ? [...doc] : { ...doc };
  const [key, value] = entries[index]!;
  (copy as Record<string, unknown>)[key] = mutate(value, path.slice(1), replacement);
  return copy;
}

t.test(
  "mutated seed objects never throw, and every violation path names a place in the document",
  async (t) => {
    const objects = seedObjects();
    fc.assert(
      fc.property(
        fc.nat(objects.length - 1),
        fc.array(fc.nat(), { maxLength: 12 }),
        json,
        (which, path, replacement) => {
          const doc = mutate(objects[which], path, replacement) as Record<string, unknown>;
          const violations = checkSchema(doc);
          return violations.every((v) => {
            if (!isWellFormed(v)) return false;
            // The path's parent must exist (the field itself may be the missing or unknown one).
            const parent = v.path.split("/").slice(0, -1).join("/");
            let node: unknown = doc;
            for (const raw of parent.split("/").slice(1)) {
              const token = raw.replaceAll("~1", "/").replaceAll("~0", "~");
              if (node === null || typeof node !== "object" || !Object.hasOwn(node, token)) return false;
              node = (node as Record<string, unknown>)[token];
            }
            return true;
          });
        },
      ),
      { numRuns: 1500 },
    );
    t.pass("1500 mutations");
  },
);
