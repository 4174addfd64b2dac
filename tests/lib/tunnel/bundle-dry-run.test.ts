// The `dry-run` stream's Bundle requests (a plan's diff against the live cluster): the kinds an
// agent dry-runs for a Bundle are exactly the kinds a Bundle may hold, never a Secret, and an
// answer's objects and schema findings are taken only in their shape and bounded.
import t from "tap";
import { BUNDLE_KINDS } from "../../../operators/api/kubernetes-objects.ts";
import {
  BUNDLE_DRY_RUN_KINDS,
  MAX_DRY_RUN_MESSAGE,
  parseDryRunAnswer,
  parseDryRunRequest,
} from "../../../operators/lib/tunnel/index.ts";

const object = (apiVersion: string, kind: string) => ({
  apiVersion,
  kind,
  metadata: { name: "x", namespace: "web" },
});

t.test("the Bundle kinds of the dry-run stream are the api's, and no Secret", async (t) => {
  const fromApi = Object.entries(BUNDLE_KINDS)
    .map(([kind, { apiVersion }]) => `${apiVersion} ${kind}`)
    .sort();
  const fromTunnel = Object.entries(BUNDLE_DRY_RUN_KINDS)
    .flatMap(([apiVersion, kinds]) => kinds.map((kind) => `${apiVersion} ${kind}`))
    .sort();
  t.same(fromTunnel, fromApi);
  t.throws(() => parseDryRunRequest({ object: object("v1", "Secret"), bundle: true }), /not a Bundle kind/);
  t.throws(
    () => parseDryRunRequest({ object: object("v1", "ConfigMap") }),
    /not a workload/,
    "only with bundle",
  );
  t.throws(
    () => parseDryRunRequest({ object: object("v1", "ConfigMap"), bundle: "yes" }),
    /bundle must be a boolean/,
  );
  t.match(parseDryRunRequest({ object: object("v1", "ConfigMap"), bundle: true }), { bundle: true });
});

t.test("a Bundle answer's objects and findings are kept only when well formed, and bounded", async (t) => {
  t.same(parseDryRunAnswer({ state: "passed", live: null, planned: { kind: "ConfigMap" } }), {
    state: "passed",
    live: null,
    planned: { kind: "ConfigMap" },
  });
  t.same(parseDryRunAnswer({ state: "passed", live: "x", planned: { kind: "ConfigMap" } }), {
    state: "passed",
  });
  const long = "x".repeat(MAX_DRY_RUN_MESSAGE + 10);
  const answer = parseDryRunAnswer({ state: "passed", schema: [...Array(40).fill(long), 7], tooLarge: true });
  t.equal(answer.state === "passed" ? answer.schema?.length : 0, 32);
  t.ok(answer.state === "passed" && answer.schema?.every((m) => m.length <= MAX_DRY_RUN_MESSAGE + 1));
  t.match(answer, { tooLarge: true });
});
