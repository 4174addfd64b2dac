// A failed API call is one line: the client's ApiException (status, body and every header in its
// message) never reaches a user or a log as it is. A real HTTP server answers as an API server
// does, with a Status body and headers, so the error is the client's own.
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import t from "tap";
import {
  apiErrorCode,
  describeApiError,
  KubeApiError,
} from "../../../../operators/agent/runtimes/kubernetes/api-error.ts";
import { apiServer } from "./api-server.ts";

async function failure(kc: KubeConfig): Promise<unknown> {
  try {
    await kc.makeApiClient(CoreV1Api).readNamespacedSecret({ name: "id", namespace: "rlark-system" });
  } catch (err) {
    return err;
  }
  throw new Error("the call did not fail");
}

t.test("a Status answer becomes code, reason and the server's message, naming the object", async (t) => {
  const status = JSON.stringify({
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    message: 'namespaces "rlark-system" not found',
    reason: "NotFound",
    details: { name: "rlark-system", kind: "namespaces" },
    code: 404,
  });
  const err = await failure(await apiServer(t, 404, status));
  t.match((err as Error).message, /Headers/, "the client's own message is the HTTP dump");
  t.equal(apiErrorCode(err), 404);
  const line = describeApiError(err, "Secret rlark-system/id");
  t.equal(line, 'Secret rlark-system/id: 404 NotFound: namespaces "rlark-system" not found');
  const wrapped = new KubeApiError(err, "Secret rlark-system/id");
  t.equal(wrapped.message, line);
  t.equal(wrapped.code, 404);
});

t.test("without a Status body the line still says the code and no headers", async (t) => {
  const err = await failure(await apiServer(t, 401, ""));
  const line = describeApiError(err);
  t.match(line, /^401\b/);
  t.notMatch(line, /audit-id|Headers|Body|\n/);
});

t.test("a message with newlines and control characters stays on one line", async (t) => {
  const status = JSON.stringify({
    kind: "Status",
    reason: "Invalid",
    message: "bad\nvalue\u001b[31m",
    code: 422,
  });
  const line = describeApiError(await failure(await apiServer(t, 422, status)));
  t.equal(line, "422 Invalid: bad value [31m");
});

t.test("errors that are not API answers keep their first line", async (t) => {
  t.equal(
    describeApiError(new Error("connect ECONNREFUSED 127.0.0.1:6443\nmore")),
    "connect ECONNREFUSED 127.0.0.1:6443",
  );
  t.equal(describeApiError("plain", "x"), "x: plain");
});
