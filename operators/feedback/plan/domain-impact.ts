// Domain address pools: how many addresses the planned Jobs in each Domain would take, against
// what the live Domain has already handed out. One address per pod, as the Domain controller
// allocates them.
import type { Domain, Job } from "../../api/index.ts";
import { ipToInt, parseCidr } from "../../controllers/domain/index.ts";
import type { KubeObject } from "../../lib/store/index.ts";
import type { DomainImpact, ObjectChange } from "./types.ts";

function podsOf(job: Job): number {
  if (job.spec.stopped === true) return 0;
  let pods = 0;
  for (const task of job.spec.tasks) {
    const workload = task.kubernetes?.workload;
    if (workload) pods += workload.kind === "DaemonSet" ? 1 : (workload.replicas ?? 1);
    else pods += task.raw?.replicas ?? 1;
  }
  return pods;
}

export function domainImpact(input: {
  domains: ReadonlyMap<string, Domain>;
  jobs: ReadonlyMap<string, Job>;
  changes: readonly ObjectChange[];
  live: readonly KubeObject[];
}): DomainImpact[] {
  const liveDomains = new Map(
    input.live.filter((o): o is Domain => o.kind === "Domain").map((d) => [d.metadata.name, d]),
  );
  const liveJobs = new Map(
    input.live.filter((o): o is Job => o.kind === "Job").map((j) => [j.metadata.name, j]),
  );
  const touchedJobs = new Set(input.changes.filter((c) => c.kind === "Job").map((c) => c.name));
  const touchedDomains = new Set(
    input.changes.filter((c) => c.kind === "Domain" && c.action !== "delete").map((c) => c.name),
  );

  const requested = new Map<string, number>();
  for (const name of touchedJobs) {
    const planned = input.jobs.get(name);
    const current = liveJobs.get(name);
    // A changed Job's current pods already hold addresses in its current Domain: count the difference.
    if (planned?.spec.domain) {
      const before = current?.spec.domain === planned.spec.domain ? podsOf(current) : 0;
      const delta = podsOf(planned) - before;
      requested.set(planned.spec.domain, (requested.get(planned.spec.domain) ?? 0) + delta);
      if (delta !== 0 || !current) touchedDomains.add(planned.spec.domain);
    }
    if (current?.spec.domain && current.spec.domain !== planned?.spec.domain) {
      requested.set(current.spec.domain, (requested.get(current.spec.domain) ?? 0) - podsOf(current));
    }
  }

  const impacts: DomainImpact[] = [];
  for (const name of [...touchedDomains].sort()) {
    const domain = input.domains.get(name);
    if (!domain) continue;
    let range: ReturnType<typeof parseCidr>;
    try {
      range = parseCidr(domain.spec.cidr);
    } catch {
      continue;
    }
    const usable = Math.max(0, range.last - range.first + 1);
    const allocations = liveDomains.get(name)?.status?.ipAllocations ?? [];
    const outOfRange = allocations.filter((a) => {
      const ip = ipToInt(a.ip);
      return ip === undefined || ip < range.first || ip > range.last;
    }).length;
    const wanted = Math.max(0, requested.get(name) ?? 0);
    impacts.push({
      domain: name,
      cidr: domain.spec.cidr,
      usable,
      allocated: allocations.length,
      requested: wanted,
      free: usable - allocations.length - wanted,
      outOfRange,
    });
  }
  return impacts;
}
