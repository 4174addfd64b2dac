import {
  arrayAt,
  type ManifestObject,
  type ObjectRule,
  objectAt,
  type RuleContext,
  stringAt,
} from "../rule-context.ts";
import { suggest } from "./job-specs.ts";

/** dependsOn names jobs of the same Workflow and the graph has no cycle (the cycle is named). */
export const workflowDagRule: ObjectRule = { kinds: ["Workflow"], names: [], check: checkWorkflow };

function checkWorkflow(workflow: ManifestObject, ctx: RuleContext): void {
  const jobs = arrayAt(objectAt(workflow.object, "spec"), "jobs");
  const indexOf = new Map<string, number>();
  jobs.forEach((job, i) => {
    const name = stringAt(job, "name");
    if (name === undefined) return;
    if (indexOf.has(name)) {
      ctx.report(workflow, `/spec/jobs/${i}/name`, "cross/unique-name", `job "${name}" is listed twice`);
    } else indexOf.set(name, i);
  });
  const edges = new Map<string, string[]>();
  jobs.forEach((job, i) => {
    const name = stringAt(job, "name");
    if (name === undefined) return;
    const deps: string[] = [];
    arrayAt(job, "dependsOn").forEach((dep, d) => {
      if (typeof dep !== "string") return;
      if (!indexOf.has(dep)) {
        ctx.report(
          workflow,
          `/spec/jobs/${i}/dependsOn/${d}`,
          "cross/depends-on",
          `depends on "${dep}", which is not a job of this Workflow${suggest(dep, indexOf.keys())}`,
        );
      } else deps.push(dep);
    });
    edges.set(name, deps);
  });
  const cycle = findCycle(edges);
  if (cycle) {
    const first = cycle[0] as string;
    ctx.report(
      workflow,
      `/spec/jobs/${indexOf.get(first)}/dependsOn`,
      "cross/dag-cycle",
      `dependsOn forms a cycle: ${cycle.join(" -> ")}`,
    );
  }
}

/**
 * A cycle in "a depends on b" edges, written in run order (`a -> b -> c -> a` means b waits for a,
 * c for b, a for c), or undefined. Iterative DFS, so a long chain cannot overflow the stack.
 */
export function findCycle(edges: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, "active" | "done">();
  for (const start of [...edges.keys()].sort()) {
    if (state.has(start)) continue;
    const stack: { node: string; next: number }[] = [{ node: start, next: 0 }];
    state.set(start, "active");
    while (stack.length > 0) {
      const frame = stack[stack.length - 1] as { node: string; next: number };
      const deps = edges.get(frame.node) ?? [];
      if (frame.next >= deps.length) {
        state.set(frame.node, "done");
        stack.pop();
        continue;
      }
      const dep = deps[frame.next++] as string;
      const seen = state.get(dep);
      if (seen === "active") {
        const path = stack.map((f) => f.node);
        const loop = path.slice(path.indexOf(dep));
        // Edges point from dependant to dependency; reverse to read in run order.
        const ordered = [...loop].reverse();
        // Start at the smallest name so the same cycle always reads the same way.
        const smallest = ordered.indexOf([...ordered].sort()[0] as string);
        const rotated = [...ordered.slice(smallest), ...ordered.slice(0, smallest)];
        return [...rotated, rotated[0] as string];
      }
      if (seen === undefined) {
        state.set(dep, "active");
        stack.push({ node: dep, next: 0 });
      }
    }
  }
  return undefined;
}
