// Fixtures shared by the API tests: the seed's objects, parsed fresh for each caller.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const seedText = readFileSync(new URL("../fixtures/api/seed-objects.yaml", import.meta.url), "utf8");

export type Doc = Record<string, unknown>;

export function seedObjects(): Doc[] {
  return parseAllDocuments(seedText).map((document) => document.toJS() as Doc);
}

export function seedObject(kind: string): Doc {
  const found = seedObjects().find((doc) => doc.kind === kind);
  if (!found) throw new Error(`no seed object of kind ${kind}`);
  return found;
}

/** The seed's Job with its task list, for edits in tests. */
export function seedJob(): Doc & { spec: { tasks: Doc[] } } {
  return seedObject("Job") as Doc & { spec: { tasks: Doc[] } };
}
