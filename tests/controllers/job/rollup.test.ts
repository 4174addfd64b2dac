import fc from "fast-check";
import t from "tap";
import type { JobTaskStatus, TaskTemplate } from "../../../operators/api/index.ts";
import { failureMessage, finishes, rollup } from "../../../operators/controllers/job/index.ts";
import { k8sTask, rawTask } from "../placement/fixtures.ts";

const phases = ["Pending", "Scheduled", "Running", "Succeeded", "Failed"] as const;
const kinds = ["Job", "Deployment", "StatefulSet", "DaemonSet", "raw-Job", "raw-Deployment"] as const;

function template(name: string, kind: (typeof kinds)[number]): TaskTemplate {
  if (kind === "raw-Job") return rawTask(name, { kind: "Job" });
  if (kind === "raw-Deployment") return rawTask(name, { kind: "Deployment" });
  return k8sTask(name, { kind });
}

const jobArb = fc.array(fc.tuple(fc.constantFrom(...kinds), fc.constantFrom(...phases)), {
  minLength: 1,
  maxLength: 6,
});

t.test("the Job phase follows its tasks' phases exactly as the seed's state machine says", async (t) => {
  fc.assert(
    fc.property(jobArb, (spec) => {
      const templates = spec.map(([kind], i) => template(`t${i}`, kind));
      const statuses: JobTaskStatus[] = spec.map(([, phase], i) => ({ name: `t${i}`, phase }));
      const { phase } = rollup(templates, statuses);
      const anyFailed = statuses.some((s) => s.phase === "Failed");
      const finishing = templates.filter(finishes).map((x) => x.name);
      const allFinishingSucceeded =
        finishing.length > 0 &&
        finishing.every((name) => statuses.find((s) => s.name === name)?.phase === "Succeeded");
      const allUp = statuses.every((s) => s.phase === "Running" || s.phase === "Succeeded");
      const expected = anyFailed
        ? "Failed"
        : allFinishingSucceeded
          ? "Succeeded"
          : allUp
            ? "Running"
            : "Pending";
      return phase === expected;
    }),
    { numRuns: 2000 },
  );
  t.pass("2000 random task mixes");
});

t.test("long-running tasks never finish a Job", async (t) => {
  const templates = [
    k8sTask("a", { kind: "Deployment" }),
    k8sTask("b", { kind: "DaemonSet" }),
    rawTask("c", { kind: "Deployment" }),
  ];
  const statuses: JobTaskStatus[] = templates.map((x) => ({ name: x.name, phase: "Running" }));
  t.equal(rollup(templates, statuses).phase, "Running");
});

t.test("a Docker task finishes a Job unless it restarts Always", async (t) => {
  const docker = (name: string, restartPolicy?: "Never" | "OnFailure" | "Always"): TaskTemplate => ({
    name,
    role: "Env",
    agentType: "Docker",
    docker: { image: "cam:1", ...(restartPolicy ? { restartPolicy } : {}) },
  });
  const done: JobTaskStatus[] = [{ name: "a", phase: "Succeeded" }];
  t.equal(rollup([docker("a")], done).phase, "Succeeded", "Never, the default, runs to completion");
  t.equal(rollup([docker("a", "OnFailure")], done).phase, "Succeeded");
  t.notOk(finishes(docker("a", "Always")), "a service never finishes");
});

t.test("a failure message carries the reason, the exit code and the detail", async (t) => {
  t.equal(
    failureMessage({
      name: "learner",
      phase: "Failed",
      reason: "OOMKilled",
      exitCode: 137,
      message: "killed",
    }),
    "task learner failed: OOMKilled (exit code 137): killed",
  );
  t.equal(failureMessage({ name: "x", phase: "Failed", exitCode: 3 }), "task x failed: (exit code 3)");
});
