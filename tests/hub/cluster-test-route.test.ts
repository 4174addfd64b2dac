// POST /api/v1/clusters/:cluster/test on a real hub: admins only, refused for viewers; a hub
// without agentless clusters says so (503); a name that is no DNS label is refused unread; with a
// tester set (as cli/agentless.ts sets it), its answer is served, 404 and 409 for a Cluster that
// is missing or not agentless. The real test against a real API server is in
// tests/e2e/bundles/bundle-agentless.test.ts (`rlark cluster test`).
import t from "tap";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rlark } from "../helpers/rlark-cli.ts";

t.test("the on-demand connectivity test route", async (t) => {
  const { hub } = await startHubOnGit(t, { files: { "placeholder.yaml": "# none\n" } });
  const post = (name: string, token = hub.adminToken) =>
    fetch(`${hub.url}/api/v1/clusters/${name}/test`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
    });
  t.equal((await fetch(`${hub.url}/api/v1/clusters/lab/test`, { method: "POST" })).status, 401);
  t.equal(
    (
      await fetch(`${hub.url}/api/v1/clusters/lab/test`, {
        headers: { authorization: `Bearer ${hub.adminToken}` },
      })
    ).status,
    405,
  );
  const none = await post("lab");
  t.equal(none.status, 503);
  t.match(((await none.json()) as { message: string }).message, /drives no agentless clusters/);
  t.equal((await post("Not_A_Name")).status, 400);

  const asked: string[] = [];
  hub.setClusterTester(async (cluster) => {
    asked.push(cluster);
    if (cluster === "gone") return { tested: false, reason: "NotFound", message: 'no Cluster "gone"' };
    if (cluster === "edge")
      return { tested: false, reason: "NotAgentless", message: "its own agent tests it" };
    return {
      tested: true,
      ok: false,
      testedAt: "2026-12-06T00:00:00.000Z",
      message: "/version: 401 Unauthorized",
    };
  });
  const lab = await post("lab");
  t.equal(lab.status, 200);
  t.same(await lab.json(), {
    cluster: "lab",
    ok: false,
    testedAt: "2026-12-06T00:00:00.000Z",
    message: "/version: 401 Unauthorized",
  });
  t.equal((await post("gone")).status, 404);
  t.equal((await post("edge")).status, 409);
  t.same(asked, ["lab", "gone", "edge"]);

  const cli = await rlark(["cluster", "test", "lab", "--hub", hub.url, "--token", hub.adminToken]);
  t.equal(cli.code, 1, "a failed test exits 1");
  t.equal(
    cli.stdout,
    "lab: the API did not answer at 2026-12-06T00:00:00.000Z: /version: 401 Unauthorized\n",
  );
  const json = await rlark([
    "cluster",
    "test",
    "lab",
    "--hub",
    hub.url,
    "--token",
    hub.adminToken,
    "-o",
    "json",
  ]);
  t.match(JSON.parse(json.stdout), { cluster: "lab", ok: false });
  const edge = await rlark(["cluster", "test", "edge", "--hub", hub.url, "--token", hub.adminToken]);
  t.equal(edge.code, 2);
  t.match(edge.stderr, /HTTP 409 its own agent tests it/);
  const help = await rlark(["cluster", "test", "--help"]);
  t.equal(help.code, 0);
  t.match(help.stdout, /Usage: rlark cluster test \[options\] <name>/);
  t.match(help.stdout, /Exit status: 0 the API answered, 1 it did not/);
  hub.setClusterTester(undefined);
  t.equal((await post("lab")).status, 503, "cleared when the agentless clusters stop");
});
