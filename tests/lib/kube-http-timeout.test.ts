// KubeHttp's request timeout bounds the whole answer, 429 resends included. The apiserver answers
// 429 (priority and fairness, a cache being built) with a Retry-After, and KubeHttp sends again up
// to five times; a caller with a deadline (a Lease renewal: a third of the renew deadline) would
// otherwise wait five Retry-Afters, past its deadline. A throttling apiserver cannot be made to
// order: an HTTP server of the test's own answers every request as a throttled apiserver does.
import { createServer } from "node:http";
import { KubeConfig } from "@kubernetes/client-node";
import t from "tap";
import { KubeHttp, KubeHttpError } from "../../operators/lib/kube-http.ts";

t.test(
  "a request's timeout covers its 429 resends: it gives up with the 429 when no time is left",
  async (t) => {
    let answered = 0;
    const server = createServer((_req, res) => {
      answered++;
      res.writeHead(429, { "content-type": "application/json", "retry-after": "1" });
      res.end(JSON.stringify({ kind: "Status", code: 429, reason: "TooManyRequests", message: "throttled" }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [
        {
          name: "c",
          server: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
          skipTLSVerify: true,
        },
      ],
      users: [{ name: "u" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    const http = new KubeHttp({ kubeConfig });
    t.teardown(() => http.close());

    // 1.5 s: one Retry-After (1 s) fits, a second does not.
    const error = await http.request("GET", "/apis/coordination.k8s.io/v1/leases", { timeoutMs: 1_500 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(error instanceof KubeHttpError && error.code === 429, "the 429 is the answer");
    t.ok(answered <= 2, `sent ${answered} times, not five`);

    // Without a timeout, the resends go on as before (five sends).
    answered = 0;
    await http.request("GET", "/apis/coordination.k8s.io/v1/leases").catch(() => undefined);
    t.equal(answered, 5, "five sends without a timeout");
  },
);
