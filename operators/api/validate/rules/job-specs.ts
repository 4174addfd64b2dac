// Rules on Job specs, wherever one is written: a Job's spec, or a Workflow's job template.

import { artifactSource } from "../../artifact-url.ts";
import { closest } from "../../violations.ts";
import { RAY_HEAD_TASK_ANNOTATION, RAY_ROLE_ANNOTATION } from "../../well-known.ts";
import { dns1123LabelError } from "../kubernetes-syntax.ts";
import {
  arrayAt,
  type CrossRule,
  escapePointer,
  isObject,
  type JsonObject,
  type ManifestObject,
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

export function jobSpecSites(ctx: RuleContext): JobSpecSite[] {
  const sites: JobSpecSite[] = [];
  for (const job of ctx.ofKind("Job")) {
    const spec = objectAt(job.object, "spec");
    if (spec) sites.push({ owner: job, pointer: "/spec", spec, jobName: job.name });
  }
  for (const workflow of ctx.ofKind("Workflow")) {
    arrayAt(objectAt(workflow.object, "spec"), "jobs").forEach((entry, i) => {
      const template = objectAt(entry, "template");
      const name = stringAt(entry, "name");
      if (template && name) {
        sites.push({
          owner: workflow,
          pointer: `/spec/jobs/${i}/template`,
          spec: template,
          jobName: `${workflow.name}-${name}`,
        });
      }
    });
  }
  return sites;
}

export const jobSpecRules: CrossRule = (ctx) => {
  const domains = ctx.names("Domain");
  for (const site of jobSpecSites(ctx)) {
    const { owner, pointer, spec } = site;
    const domain = stringAt(spec, "domain");
    if (domain !== undefined && !domains.has(domain)) {
      ctx.report(
        owner,
        `${pointer}/domain`,
        "cross/domain-exists",
        `Domain "${domain}" is not defined in the repository${suggest(domain, domains)}`,
      );
    }
    const tasks = arrayAt(spec, "tasks").filter(isObject);
    checkHeads(ctx, site, tasks);
    checkRay(ctx, site, tasks);
    tasks.forEach((task, i) => {
      const at = `${pointer}/tasks/${i}`;
      const taskName = stringAt(task, "name") ?? "";
      const fullName = `${site.jobName}-${taskName}`;
      const nameError = dns1123LabelError(fullName);
      if (nameError) {
        ctx.report(
          owner,
          `${at}/name`,
          "cross/task-name",
          `Task name "${fullName}" (<job>-<task>) ${nameError}`,
        );
      }
      const url = stringAt(objectAt(objectAt(task, "raw"), "artifact"), "url");
      const source = url === undefined ? undefined : artifactSource(url);
      if (source?.kind === "invalid") {
        ctx.report(owner, `${at}/raw/artifact/url`, "cross/artifact-url", `artifact url ${source.reason}`);
      }
    });
  }
};

function checkHeads(ctx: RuleContext, site: JobSpecSite, tasks: JsonObject[]) {
  const heads = tasks.flatMap((t, i) => (t.head === true ? [i] : []));
  for (const extra of heads.slice(1)) {
    const first = stringAt(tasks[heads[0] as number], "name");
    ctx.report(
      site.owner,
      `${site.pointer}/tasks/${extra}/head`,
      "cross/single-head",
      `at most one head task per Job; "${first}" is already the head`,
    );
  }
}

function checkRay(ctx: RuleContext, site: JobSpecSite, tasks: JsonObject[]) {
  const roleOf = new Map(
    tasks.map((t) => [stringAt(t, "name"), stringAt(objectAt(t, "annotations"), RAY_ROLE_ANNOTATION)]),
  );
  tasks.forEach((task, i) => {
    const annotations = objectAt(task, "annotations");
    if (stringAt(annotations, RAY_ROLE_ANNOTATION) !== "worker") return;
    const head = stringAt(annotations, RAY_HEAD_TASK_ANNOTATION);
    const at = `${site.pointer}/tasks/${i}/annotations/${escapePointer(RAY_HEAD_TASK_ANNOTATION)}`;
    if (head === undefined) {
      ctx.report(
        site.owner,
        `${site.pointer}/tasks/${i}/annotations`,
        "cross/ray-head",
        `a Ray worker needs ${RAY_HEAD_TASK_ANNOTATION}`,
      );
    } else if (!roleOf.has(head)) {
      ctx.report(site.owner, at, "cross/ray-head", `names task "${head}", which this Job does not have`);
    } else if (roleOf.get(head) !== "head") {
      ctx.report(
        site.owner,
        at,
        "cross/ray-head",
        `task "${head}" is not a Ray head (${RAY_ROLE_ANNOTATION}: head)`,
      );
    }
  });
}

/** ` (did you mean "x"?)` when a close name exists, so typos are quick to fix. */
export function suggest(value: string, candidates: Iterable<string>): string {
  const best = closest(value, [...candidates]);
  return best === undefined ? "" : ` (did you mean "${best}"?)`;
}
