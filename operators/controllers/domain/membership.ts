// Which Jobs are in which Domain, as the Job watch has seen them. It spares every Domain
// reconcile a list of all Jobs (10,000 Jobs take ~140 ms to list here). The index may lag the
// store; the reconcile never releases an address on the index's word alone (see controller.ts).

export class DomainMembership {
  #domainOfJob = new Map<string, string>();
  #jobsOfDomain = new Map<string, Set<string>>();

  /** Records the Job's Domain (undefined: none, or the Job is gone); returns the one before. */
  set(job: string, domain: string | undefined): string | undefined {
    const before = this.#domainOfJob.get(job);
    if (before === domain) return before;
    if (before !== undefined) {
      const set = this.#jobsOfDomain.get(before);
      set?.delete(job);
      if (set?.size === 0) this.#jobsOfDomain.delete(before);
    }
    if (domain === undefined) this.#domainOfJob.delete(job);
    else {
      this.#domainOfJob.set(job, domain);
      const set = this.#jobsOfDomain.get(domain) ?? new Set<string>();
      set.add(job);
      this.#jobsOfDomain.set(domain, set);
    }
    return before;
  }

  domainOf(job: string): string | undefined {
    return this.#domainOfJob.get(job);
  }

  jobsOf(domain: string): ReadonlySet<string> {
    return this.#jobsOfDomain.get(domain) ?? new Set();
  }
}
