import t from "tap";
import { checkSchema, kindInfo } from "../../operators/api/index.ts";
import { kubernetesPlaces } from "../../operators/api/kubernetes-templates.ts";
import { type Doc, seedObject } from "./helpers.ts";

t.test("pod templates are found in Jobs, Workflow templates and Tasks from the schemas alone", async (t) => {
  const places = (kind: string): string[] =>
    kubernetesPlaces(kindInfo(kind)!.schema).map((place) => `/${place.segments.join("/")}`);
  t.same(places("Job"), ["/spec/tasks/*/kubernetes/workload/template"]);
  t.same(places("Workflow"), ["/spec/jobs/*/template/tasks/*/kubernetes/workload/template"]);
  t.same(places("Task"), ["/spec/kubernetes/workload/template"]);
  t.same(places("Domain"), []);
});

t.test("an error in a Workflow's pod template points into that template", async (t) => {
  const workflow = seedObject("Workflow") as Doc & { spec: { jobs: Array<{ template: { tasks: Doc[] } }> } };
  workflow.spec.jobs[0]!.template.tasks.push({
    name: "trainer",
    role: "Actor",
    agentType: "Kubernetes",
    kubernetes: {
      workload: {
        kind: "Job",
        template: { spec: { containers: [{ name: "t", image: "x", ports: [{ containerPort: "http" }] }] } },
      },
    },
  });
  t.same(checkSchema(workflow), [
    {
      path: "/spec/jobs/0/template/tasks/1/kubernetes/workload/template/spec/containers/0/ports/0/containerPort",
      rule: "kubernetes/pod-template",
      message: 'must be integer (got "http")',
    },
  ]);
});

t.test("an error in a Task's pod template points into that template", async (t) => {
  const task = seedObject("Task") as Doc & {
    spec: { kubernetes: { workload: { template: { spec: Doc } } } };
  };
  task.spec.kubernetes.workload.template.spec.containers = "trainer";
  t.same(checkSchema(task), [
    {
      path: "/spec/kubernetes/workload/template/spec/containers",
      rule: "kubernetes/pod-template",
      message: 'must be array (got "trainer")',
    },
  ]);
});

t.test("a template that is not an object gets our type error only, not a Kubernetes cascade", async (t) => {
  const task = seedObject("Task") as Doc & { spec: { kubernetes: { workload: Doc } } };
  task.spec.kubernetes.workload.template = "see above";
  t.same(checkSchema(task), [
    {
      path: "/spec/kubernetes/workload/template",
      rule: "schema/type",
      message: 'must be object (got "see above")',
    },
  ]);
});

t.test(
  "the template's own namespace field is ours, not part of the Kubernetes PodTemplateSpec",
  async (t) => {
    const task = seedObject("Task");
    t.same(checkSchema(task), [], "namespace: default beside metadata and spec is accepted");
  },
);

t.test("a misspelt field in a pod template is reported, with the field it probably meant", async (t) => {
  const task = seedObject("Task") as Doc & {
    spec: { kubernetes: { workload: { template: { spec: { containers: Doc[] }; metadata?: Doc } } } };
  };
  const template = task.spec.kubernetes.workload.template;
  template.spec.containers[0]!.imagee = "busybox";
  template.spec.containers[0]!.resources = { limit: { cpu: "1" } };
  template.metadata = { label: { app: "x" }, annotations: { "any/key": "is fine" } };
  t.same(checkSchema(task), [
    {
      path: "/spec/kubernetes/workload/template/metadata/label",
      rule: "kubernetes/pod-template",
      message: 'unknown field "label" (did you mean "labels"?)',
    },
    {
      path: "/spec/kubernetes/workload/template/spec/containers/0/imagee",
      rule: "kubernetes/pod-template",
      message: 'unknown field "imagee" (did you mean "image"?)',
    },
    {
      path: "/spec/kubernetes/workload/template/spec/containers/0/resources/limit",
      rule: "kubernetes/pod-template",
      message: 'unknown field "limit" (did you mean "limits"?)',
    },
  ]);
});

t.test("maps inside pod templates (labels, resource lists, node selectors) take any key", async (t) => {
  const job = seedObject("Job");
  t.same(checkSchema(job), [], "the seed's Job, with volumes, resources and labels, has no unknown field");
});
