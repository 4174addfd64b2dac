// A Bundle's folder of plain manifests at validation (docs/bundles.md): its documents become the
// Bundle's spec.objects; a kind the Bundle does not allow, a plain Secret and another namespace
// are refused naming file, line and field, and a Secret's values are never repeated.
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { validatePaths } from "../../../operators/source/index.ts";

async function repo(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-bundle-validation-"));
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), text);
  }
  return dir;
}

const bundle = (extra = "") => `apiVersion: rlinf.io/v1alpha1
kind: Bundle
metadata:
  name: web
spec:
  path: apps/web
  namespace: web
  clusterSelector: { matchLabels: { env: lab } }
${extra}`;

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers: [{ name: web, image: nginx }]
`;

const service = (port: number) => `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: { app: web }
  ports: [{ name: http, port: ${port} }]
`;

async function validate(files: Record<string, string>) {
  const dir = await repo(files);
  return validatePaths([dir], { baseDir: dir });
}

t.test(
  "the documents under a Bundle's path are its objects, in its namespace and labelled as its",
  async (t) => {
    const result = await validate({
      "bundles/web.yaml": bundle().replace("path: apps/web", "path: ../apps/web"),
      "apps/web/deployment.yaml": deployment,
      "apps/web/svc/service.yaml": service(80),
      "apps/other/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: elsewhere }\n",
    });
    t.same(result.errors, []);
    const web = result.objects.find((o) => o.kind === "Bundle");
    const spec = (web?.object.spec ?? {}) as {
      objects?: { kind: string; metadata: Record<string, unknown> }[];
    };
    const objects = spec.objects;
    t.same(
      objects?.map((o) => [o.kind, o.metadata.name, o.metadata.namespace]),
      [
        ["Deployment", "web", "web"],
        ["Service", "web", "web"],
      ],
    );
    t.same(objects?.[0]?.metadata.labels, {
      "rlark.io/bundle": "web",
      "rlark.io/managed-by": "rlark-bundle",
    });
    // A plain document under no Bundle's path is still skipped with a warning.
    t.same(
      result.warnings.map((w) => [w.file, w.rule]),
      [["apps/other/configmap.yaml", "foreign/skipped"]],
    );
  },
);

t.test("a kind the Bundle does not allow is refused naming file, line and field", async (t) => {
  const result = await validate({
    "web.yaml": bundle(),
    "apps/web/all.yaml": `${deployment}---\napiVersion: v1\nkind: ServiceAccount\nmetadata: { name: web }\n`,
  });
  t.equal(result.valid, false);
  t.match(result.errors, [
    {
      file: "apps/web/all.yaml",
      line: 13,
      path: "/kind",
      rule: "bundle/kind-not-allowed",
      message:
        /kind ServiceAccount is not allowed in Bundle "web" \(web\.yaml:1\).*add it to spec.allowedKinds/,
    },
  ]);
  // Allowed when the Bundle names it.
  const allowed = await validate({
    "web.yaml": bundle("  allowedKinds: [Deployment, ServiceAccount]\n"),
    "apps/web/all.yaml": `${deployment}---\napiVersion: v1\nkind: ServiceAccount\nmetadata: { name: web }\n`,
  });
  t.same(allowed.errors, []);
  // A kind no Bundle may hold at all (cluster-wide RBAC, CRDs) is refused the same way.
  const role = await validate({
    "web.yaml": bundle(),
    "apps/web/role.yaml":
      "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: { name: x }\n",
  });
  t.match(role.errors, [{ file: "apps/web/role.yaml", line: 2, rule: "bundle/kind-not-allowed" }]);
  const listed = await validate({ "web.yaml": bundle("  allowedKinds: [Deployment, Secret]\n") });
  t.match(listed.errors, [{ file: "web.yaml", path: "/spec/allowedKinds/1" }], "Secret cannot be allowed");
});

t.test(
  "a plain Secret is refused, only SealedSecrets bring Secrets, and its values are not repeated",
  async (t) => {
    const value = "s3cr3t-value-that-must-not-leak";
    const result = await validate({
      "web.yaml": bundle(),
      "apps/web/secret.yaml": `apiVersion: v1\nkind: Secret\nmetadata: { name: db }\nstringData:\n  password: ${value}\ndata:\n  token: ${Buffer.from(value).toString("base64")}\n`,
    });
    t.equal(result.valid, false);
    t.match(result.errors, [
      {
        file: "apps/web/secret.yaml",
        line: 2,
        path: "/kind",
        rule: "bundle/plain-secret",
        message: /SealedSecrets/,
      },
    ]);
    const said = JSON.stringify(result);
    t.notOk(said.includes(value), "the value is in no diagnostic or object");
    t.notOk(said.includes(Buffer.from(value).toString("base64")), "nor its base64");
  },
);

t.test("a document naming another namespace is refused; one naming the Bundle's passes", async (t) => {
  const result = await validate({
    "web.yaml": bundle(),
    "apps/web/svc.yaml": service(80).replace("name: web\n", "name: web\n  namespace: kube-system\n"),
    "apps/web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: c, namespace: web }\n",
  });
  t.match(result.errors, [
    {
      file: "apps/web/svc.yaml",
      line: 5,
      path: "/metadata/namespace",
      rule: "bundle/namespace",
      message: /namespace "kube-system" is not allowed in Bundle "web".*"web"/,
    },
  ]);
  t.equal(result.errors.length, 1);
});

t.test("a document that does not fit its kind's Kubernetes schema is refused at its field", async (t) => {
  const result = await validate({
    "web.yaml": bundle(),
    "apps/web/svc.yaml": service(80).replace("port: 80", 'port: "eighty"'),
    "apps/web/old.yaml": deployment.replace("apps/v1", "extensions/v1beta1"),
  });
  t.match(result.errors, [
    { file: "apps/web/old.yaml", line: 1, path: "/apiVersion", rule: "bundle/api-version" },
    { file: "apps/web/svc.yaml", line: 7, path: "/spec/ports/0/port", rule: "bundle/kubernetes-schema" },
  ]);
});

t.test("spec.objects cannot be written in git, and one document belongs to one Bundle", async (t) => {
  const written = await validate({ "web.yaml": bundle("  objects: []\n") });
  t.match(written.errors, [{ file: "web.yaml", path: "/spec/objects", rule: "bundle/objects-from-git" }]);
  const overlap = await validate({
    "web.yaml": `${bundle()}---\n${bundle().replace("name: web", "name: web2").replace("path: apps/web", "path: apps")}`,
    "apps/web/svc.yaml": service(80),
  });
  t.match(overlap.errors, [{ file: "apps/web/svc.yaml", rule: "bundle/overlap" }]);
});
