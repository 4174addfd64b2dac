// Rules on Job specs, wherever one is written: a Job's spec, or a Workflow's job template.

import { artifactSource } from "../../artifact-url.ts";
import { closest } from "../../violations.ts";
import { RAY_HEAD_TASK_ANNOTATION, RAY_ROLE_ANNOTATION } from "../../well-known.ts";
import { dns1123LabelError } from "../kubernetes-syntax.ts";
import {
  arrayAt,
  escapePointer,
  isObject,
  type JsonObject,
  type ManifestObject,
  type ObjectRule,
  objectAt,
  type RuleContext,
  stringAt,
} from "../rule-context.ts";

/** A Job spec inside some object, with the name the hub will give the resulting Job. */
export interface JobSpecSite {
  owner: ManifestObject;
  pointer: string;
  spec: JsonObject;
  jobName: string;
}

/** The Job specs one object holds: a Job's own, or each of a Workflow's job templates. */
export function jobSpecSitesOf(owner: ManifestObject): JobSpecSite[] {
  if (owner.kind === "Job") {
    const spec = objectAt(owner.object, "spec");
    return spec ? [{ owner, pointer: "/spec", spec, jobName: owner.name }] : [];
  }
  if (owner.kind !== "Workflow") return [];
  const sites: JobSpecSite[] = [];
  arrayAt(objectAt(owner.object, "spec"), "jobs").forEach((entry, i) => {
    const template = objectAt(entry, "template");
    const name = stringAt(entry, "name");
    if (template && name) {
      sites.push({
        owner,
        pointer: `/spec/jobs/${i}/template`,
        spec: template,
        jobName: `${owner.name}-${name}`,
      });
    }
  });
  return sites;
}

/** What a Job spec refers to outside itself: its Domain. The rest is checkJobSpec's, per object. */
export const jobSpecDomainRule: ObjectRule = {
  kinds: ["Job", "Workflow"],
  names: ["Domain"],
  check(owner, ctx) {
    for (const { pointer, spec } of jobSpecSitesOf(owner)) {
      const domain = stringAt(spec, "domain");
      if (domain === undefined) continue;
      const domains = ctx.names("Domain");
      if (domains.has(domain)) continue;
      ctx.report(
        owner,
        `${pointer}/domain`,
        "cross/domain-exists",
        `Domain "${domain}" is not defined in the repository${suggest(domain, domains)}`,
      );
    }
  },
};

/**
 * The rules a Job spec answers alone (one head, Ray heads, Task name lengths, artifact urls):
 * run as each object is read, so a streamed snapshot need not keep the tasks for later.
 */
export function checkJobSpec(site: JobSpecSite, report: RuleContext["report"]): void {
  const { owner, pointer, spec } = site;
  const tasks = arrayAt(spec, "tasks").filter(isObject);
  checkHeads(report, site, tasks);
  checkRay(report, site, tasks);
  tasks.forEach((task, i) => {
    const at = `${pointer}/tasks/${i}`;
    const taskName = stringAt(task, "name") ?? "";
    const fullName = `${site.jobName}-${taskName}`;
    const nameError = dns1123LabelError(fullName);
    if (nameError) {
      report(owner, `${at}/name`, "cross/task-name", `Task name "${fullName}" (<job>-<task>) ${nameError}`);
    }
    const url = stringAt(objectAt(objectAt(task, "raw"), "artifact"), "url");
    const source = url === undefined ? undefined : artifactSource(url);
    if (source?.kind === "invalid") {
      report(owner, `${at}/raw/artifact/url`, "cross/artifact-url", `artifact url ${source.reason}`);
    }
  });
}

function checkHeads(report: RuleContext["report"], site: JobSpecSite, tasks: JsonObject[]) {
  const heads = tasks.flatMap((t, i) => (t.head === true ? [i] : []));
  for (const extra of heads.slice(1)) {
    const first = stringAt(tasks[heads[0] as number], "name");
    report(
      site.owner,
      `${site.pointer}/tasks/${extra}/head`,
      "cross/single-head",
      `at most one head task per Job; "${first}" is already the head`,
    );
  }
}

function checkRay(report: RuleContext["report"], site: JobSpecSite, tasks: JsonObject[]) {
  const roleOf = new Map(
    tasks.map((t) => [stringAt(t, "name"), stringAt(objectAt(t, "annotations"), RAY_ROLE_ANNOTATION)]),
  );
  tasks.forEach((task, i) => {
    const annotations = objectAt(task, "annotations");
    if (stringAt(annotations, RAY_ROLE_ANNOTATION) !== "worker") return;
    const head = stringAt(annotations, RAY_HEAD_TASK_ANNOTATION);
    const at = `${site.pointer}/tasks/${i}/annotations/${escapePointer(RAY_HEAD_TASK_ANNOTATION)}`;
    if (head === undefined) {
      report(
        site.owner,
        `${site.pointer}/tasks/${i}/annotations`,
        "cross/ray-head",
        `a Ray worker needs ${RAY_HEAD_TASK_ANNOTATION}`,
      );
    } else if (!roleOf.has(head)) {
      report(site.owner, at, "cross/ray-head", `names task "${head}", which this Job does not have`);
    } else if (roleOf.get(head) !== "head") {
      report(
        site.owner,
        at,
        "cross/ray-head",
        `task "${head}" is not a Ray head (${RAY_ROLE_ANNOTATION}: head)`,
      );
    }
  });
}

/**
 * ` (did you mean "x"?)` when a close name exists, so typos are quick to fix. Of two as close, the
 * first by name: the suggestion must not depend on the order names were found in (a hub that keeps
 * name sets between revisions adds them in another order than a whole run).
 */
export function suggest(value: string, candidates: Iterable<string>): string {
  const best = closest(value, [...candidates].sort());
  return best === undefined ? "" : ` (did you mean "${best}"?)`;
}
