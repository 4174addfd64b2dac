// The `dry-run` request and answer are checked at both ends of the tunnel.
import t from "tap";
import { parseDryRunAnswer, parseDryRunRequest } from "../../../operators/lib/tunnel/index.ts";

const deployment = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "train-trainer", namespace: "ml" },
  spec: { replicas: 1 },
};

t.test("the agent dry-runs only namespaced workloads of the kinds a plan renders", async (t) => {
  t.same(parseDryRunRequest({ object: deployment }), { object: deployment });
  t.same(
    parseDryRunRequest({ object: { ...deployment, apiVersion: "batch/v1", kind: "Job" } }).object.kind,
    "Job",
  );
  for (const [bad, why] of [
    [{}, /object must be an object/],
    [{ object: [] }, /object must be an object/],
    [{ object: { ...deployment, kind: "" } }, /object.apiVersion and object.kind/],
    [{ object: { ...deployment, apiVersion: "v1", kind: "Secret" } }, /v1 Secret is not a workload/],
    [{ object: { ...deployment, apiVersion: "apps/v1", kind: "Job" } }, /apps\/v1 Job is not a workload/],
    [{ object: { ...deployment, metadata: { name: "x" } } }, /metadata.namespace/],
    [{ object: { ...deployment, metadata: { namespace: "ml", name: 7 } } }, /metadata.name/],
  ] as const) {
    t.throws(() => parseDryRunRequest(bad), why, JSON.stringify(bad));
  }
});

t.test("the hub takes only well-formed answers, with bounded messages", async (t) => {
  t.same(parseDryRunAnswer({ state: "passed", extra: 1 }), { state: "passed" });
  t.same(parseDryRunAnswer({ state: "failed", message: "no" }), { state: "failed", message: "no" });
  t.same(parseDryRunAnswer({ error: "bad request" }), { state: "error", message: "bad request" });
  const long = parseDryRunAnswer({ state: "failed", message: "x".repeat(10_000) });
  t.ok(long.state === "failed" && long.message.length <= 4097, "clipped");
  for (const bad of [null, "passed", { state: "failed" }, { state: "maybe", message: "?" }, { error: 1 }]) {
    t.throws(() => parseDryRunAnswer(bad), /dry-run answer/, JSON.stringify(bad));
  }
});
