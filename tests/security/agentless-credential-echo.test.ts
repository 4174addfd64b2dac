// Issue 31, item 12: an agentless cluster's API server that echoes the credential in its error
// body (its Authorization header) must not spread it: the Cluster's lastTestMessage (store, API),
// the hub's log and the status branch get the error with the credential redacted, both when the
// Version API refuses and when the cluster answers but cannot be driven.
import t from "tap";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";
import { agentlessHub, clusterYaml, kubeconfigFor, standIn, status, version } from "./agentless-bed.ts";

const TOKEN = "echoed-bearer-token-0c4b7e2a91d3";

t.test("a credential the API server echoes is redacted from every error", async (t) => {
  let versionAnswers = false;
  const echo = await standIn(t, (req, res) =>
    versionAnswers && req.url?.startsWith("/version")
      ? version(res)
      : status(
          res,
          req.url?.startsWith("/version") ? 500 : 403,
          `rejected credential ${req.headers.authorization}`,
        ),
  );
  const { hub, git, seal, lines } = await agentlessHub(t, {
    statusBranch: "rlark/status",
    statusDebounceMs: 50,
  });
  await git.commit({ "clusters/lab.yaml": clusterYaml("lab", seal("lab", kubeconfigFor(echo, TOKEN))) });
  const lastTest = (pattern: RegExp) =>
    waitFor(
      `lastTestMessage ${pattern}`,
      async () => {
        const message = (
          (await hub.store.get("Cluster", undefined, "lab"))?.status as { lastTestMessage?: string }
        )?.lastTestMessage;
        return message && pattern.test(message) ? message : undefined;
      },
      onRealServers,
    );
  const refused = await lastTest(/^\/version: 500/);
  t.ok(
    echo.requests.some((r) => r.authorization === `Bearer ${TOKEN}`),
    "the server had the token to echo",
  );
  t.match(refused, /rejected credential Bearer \S*redacted/, "the error is kept, the credential is not");

  versionAnswers = true;
  const undriven = await lastTest(/cannot be driven/);
  t.match(undriven, /redacted/);

  const api = await (
    await fetch(`${hub.url}/api/v1/rlinf.io/v1alpha1/clusters/lab`, {
      headers: { authorization: `Bearer ${hub.adminToken}` },
    })
  ).text();
  t.match(api, /cannot be driven/, "the API serves the message");
  await waitFor(
    "the status branch has the message",
    async () =>
      (await git.gitBare("log", "rlark/status", "-p").catch(() => "")).includes("cannot be driven") ||
      undefined,
    onRealServers,
  );
  const history = await git.gitBare("log", "--all", "-p");
  const stored = JSON.stringify(await hub.store.get("Cluster", undefined, "lab"));
  for (const [where, text] of [
    ["the Cluster in the store", stored],
    ["the API response", api],
    ["the hub's log", lines.join("")],
    ["git (main and status branches)", history],
  ] as const)
    t.notOk(text.includes(TOKEN), `no token in ${where}`);
  t.ok(lines.join("").includes("rejected credential"), "the log has the errors");
});
