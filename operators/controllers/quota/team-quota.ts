// A Team as admission reads it, and what a Job asks of its team: the whole request of every
// task (replicas × one replica's request), each resource counted against the quota line of the
// flavor the task's nodeSelector picks, or the resource's plain line.

import type { Job, TaskTemplate, Team } from "../../api/index.ts";
import { type Amounts, formatAmount, milli, placementTask } from "../placement/index.ts";

export interface TeamQuota {
  name: string;
  cohort?: string;
  weight: number;
  priority: number;
  members: readonly string[];
  flavors: readonly { name: string; nodeLabels: Readonly<Record<string, string>> }[];
  /** Quota key (see quotaKey) → nominal amount, in thousandths. A key without a line is not limited. */
  nominal: Amounts;
  /** Quota key → most the team may use above nominal; absent: what the cohort has idle. */
  borrowingLimit: Amounts;
}

/** "nvidia.com/gpu", or "nvidia.com/gpu[a100]" for a flavor's line. */
export function quotaKey(resource: string, flavor?: string): string {
  return flavor ? `${resource}[${flavor}]` : resource;
}

/** The resource and flavor of a quota key. */
export function parseQuotaKey(key: string): { resource: string; flavor?: string } {
  const match = /^(.*)\[(.*)\]$/.exec(key);
  return match ? { resource: match[1] as string, flavor: match[2] as string } : { resource: key };
}

/** An amount of a quota key's resource as a person writes it ("500m", "16Gi", "4"). */
export function formatQuotaAmount(key: string, amount: number): string {
  return formatAmount(parseQuotaKey(key).resource, amount);
}

/** An amount in thousandths as an exact quantity: "4", or "1500m". */
export function exactQuantity(amount: number): string {
  return amount % 1000 === 0 ? String(amount / 1000) : `${amount}m`;
}

/** "4 nvidia.com/gpu" or "4 nvidia.com/gpu of flavor a100", as messages say it. */
export function formatQuota(key: string, amount: number): string {
  const { resource, flavor } = parseQuotaKey(key);
  return `${formatAmount(resource, amount)} ${resource}${flavor ? ` of flavor ${flavor}` : ""}`;
}

export function teamQuota(team: Team): TeamQuota {
  const spec = team.spec;
  const nominal: Record<string, number> = {};
  const borrowingLimit: Record<string, number> = {};
  for (const line of spec.quota ?? []) {
    const key = quotaKey(line.resource, line.flavor);
    nominal[key] = milli(line.nominal);
    if (line.borrowingLimit !== undefined) borrowingLimit[key] = milli(line.borrowingLimit);
  }
  return {
    name: team.metadata.name,
    ...(spec.cohort ? { cohort: spec.cohort } : {}),
    weight: spec.weight ?? 1,
    priority: spec.priority ?? 0,
    members: spec.members ?? [],
    flavors: spec.flavors ?? [],
    nominal,
    borrowingLimit,
  };
}

/** The flavor a task runs on: the first the team declares whose labels its nodeSelector carries. */
function flavorOf(team: TeamQuota, nodeSelector: Readonly<Record<string, string>>): string | undefined {
  return team.flavors.find((f) => Object.entries(f.nodeLabels).every(([k, v]) => nodeSelector[k] === v))
    ?.name;
}

/**
 * What a Job holds of its team's quota while admitted. A task whose clusterSelector does not
 * parse asks for nothing here: placement refuses it with the reason.
 */
export function jobRequest(templates: readonly TaskTemplate[], team: TeamQuota): Record<string, number> {
  const total: Record<string, number> = {};
  for (const template of templates) {
    let task: ReturnType<typeof placementTask>;
    try {
      task = placementTask(template);
    } catch {
      continue;
    }
    const flavor = flavorOf(team, task.nodeSelector);
    for (const [resource, amount] of Object.entries(task.request)) {
      const flavored = flavor ? quotaKey(resource, flavor) : undefined;
      const key = flavored && flavored in team.nominal ? flavored : resource;
      total[key] = (total[key] ?? 0) + amount * task.replicas;
    }
  }
  return total;
}

/** The team a Job counts against: spec.team, else the default team; undefined: no quota applies. */
export function teamNameOf(job: Job, defaultTeam: string | undefined): string | undefined {
  return job.spec.team ?? defaultTeam;
}
