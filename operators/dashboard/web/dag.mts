// A Workflow's DAG as SVG: columns by depth (longest path from a root), edges from each
// dependency to its dependent. Pure layout, so it draws the same in every browser.
import { type Html, html } from "./html.mts";

export interface DagNode {
  name: string;
  dependsOn: readonly string[];
  phase: string;
  run?: number;
}

const W = 180;
const H = 56;
const GAP_X = 56;
const GAP_Y = 18;

export function layout(nodes: readonly DagNode[]): Map<string, { x: number; y: number; depth: number }> {
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const depth = new Map<string, number>();
  const visit = (name: string, seen: Set<string>): number => {
    const known = depth.get(name);
    if (known !== undefined) return known;
    if (seen.has(name)) return 0; // a cycle never validates; draw rather than loop
    seen.add(name);
    const deps = byName.get(name)?.dependsOn.filter((d) => byName.has(d)) ?? [];
    const d = deps.length ? 1 + Math.max(...deps.map((x) => visit(x, seen))) : 0;
    depth.set(name, d);
    return d;
  };
  for (const node of nodes) visit(node.name, new Set());
  const rows = new Map<number, number>();
  const positions = new Map<string, { x: number; y: number; depth: number }>();
  for (const node of nodes) {
    const d = depth.get(node.name) ?? 0;
    const row = rows.get(d) ?? 0;
    rows.set(d, row + 1);
    positions.set(node.name, { x: 8 + d * (W + GAP_X), y: 8 + row * (H + GAP_Y), depth: d });
  }
  return positions;
}

export function dagSvg(title: string, nodes: readonly DagNode[]): Html {
  const positions = layout(nodes);
  const width = Math.max(...[...positions.values()].map((p) => p.x + W), 0) + 8;
  const height = Math.max(...[...positions.values()].map((p) => p.y + H), 0) + 8;
  const edges = nodes.flatMap((node) =>
    node.dependsOn.flatMap((dep) => {
      const from = positions.get(dep);
      const to = positions.get(node.name);
      if (!from || !to) return [];
      const x1 = from.x + W;
      const y1 = from.y + H / 2;
      const x2 = to.x;
      const y2 = to.y + H / 2;
      const mid = (x1 + x2) / 2;
      return [
        html`<path class="edge" d="M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2 - 6},${y2}" marker-end="url(#arrow)"></path>`,
      ];
    }),
  );
  return html`<svg class="dag" role="img" aria-label="${title}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">
    <title>${title}</title>
    <defs><marker id="arrow" viewBox="0 0 10 10" refX="8" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrow"></path></marker></defs>
    ${edges}
    ${nodes.map((node) => {
      const p = positions.get(node.name)!;
      return html`<g class="dag-node phase-${node.phase.replace(/[^A-Za-z]/g, "")}" data-node="${node.name}" transform="translate(${p.x},${p.y})">
        <rect width="${W}" height="${H}" rx="8"></rect>
        <text x="12" y="22" class="dag-name">${node.name}</text>
        <text x="12" y="42" class="dag-phase">${node.phase}${node.run ? ` · run ${node.run}` : ""}</text>
      </g>`;
    })}
  </svg>`;
}
