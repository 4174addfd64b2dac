// A grant, a role or a User removed by a real git push ends what that user has open over HTTP at
// once: a log follow (the grant), and the dashboard's event stream (the User), while another
// user's follow goes on. The accesses share the bastion's session service and its one recheck.
import t from "tap";
import { hashPassword } from "../../operators/dashboard/index.ts";
import type { Hub } from "../../operators/hub/hub.ts";
import { FAST, login, openEvents } from "../dashboard/dashboard-hub.ts";
import { rawJobYaml } from "../helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";
import { policyYaml, startBastion } from "./bastion-fixture.ts";

const POD = "vision-main-0";

function passwordUserYaml(name: string, roles: string[], hash: string): string {
  return `apiVersion: rlinf.io/v1alpha1\nkind: User\nmetadata:\n  name: ${name}\nspec:\n  roles: [${roles.join(", ")}]\n  passwordHash: "${hash}"\n`;
}

/** A pod whose log grows a numbered line ten times a second. */
const tickerJob = rawJobYaml({
  name: "vision",
  kind: "Deployment",
  command: ["sh", "-c", "i=0; while :; do echo tick-$i; i=$((i+1)); sleep 0.1; done"],
});

interface Follow {
  text(): string;
  /** Resolves with how the body ended: "end" (a clean end) or the error. */
  done: Promise<string>;
  abort(): void;
}

async function follow(hub: Hub, token: string): Promise<Follow> {
  const controller = new AbortController();
  const response = await fetch(
    `${hub.url}/api/v1/rlinf.io/v1alpha1/pods/${POD}/log?namespace=agent-local&follow=true`,
    { headers: { authorization: `Bearer ${token}` }, signal: controller.signal },
  );
  if (response.status !== 200)
    throw new Error(`log follow answered ${response.status}: ${await response.text()}`);
  let text = "";
  const decoder = new TextDecoder();
  const done = (async () => {
    try {
      for await (const chunk of response.body as ReadableStream<Uint8Array>) text += decoder.decode(chunk);
      return "end";
    } catch (error) {
      return String(error);
    }
  })();
  return { text: () => text, done, abort: () => controller.abort() };
}

t.test("removing a grant, a role or a user in git ends that user's open HTTP accesses", async (t) => {
  const alice = await hashPassword("alice pw", FAST);
  const bob = await hashPassword("bob pw", FAST);
  const users = (aliceRoles: string[]) =>
    [passwordUserYaml("alice", aliceRoles, alice), passwordUserYaml("bob", ["user"], bob)].join("---\n");
  const b = await startBastion(t, {
    users: [],
    pods: [POD],
    hub: { dashboard: true },
    files: () => ({
      "users.yaml": users(["user"]),
      "job.yaml": tickerJob,
      "alice.yaml": policyYaml("alice-logs", "  subjects:\n    users: [alice]\n  verbs: [logs]\n"),
      "team.yaml": policyYaml("team-logs", "  subjects:\n    roles: [user]\n  verbs: [logs]\n"),
    }),
  });
  const { hub } = b.running;
  const tokenOf = async (username: string, password: string) => {
    const answer = await login(hub, { username, password });
    t.equal(answer.status, 200, `${username} logs in`);
    return answer.body.token as string;
  };
  const aliceToken = await tokenOf("alice", "alice pw");
  const bobToken = await tokenOf("bob", "bob pw");
  const events = await openEvents(hub, `?token=${encodeURIComponent(aliceToken)}`);
  t.teardown(() => events.close());
  t.equal(events.status, 200);
  await waitFor("alice's snapshot", () => events.find((m) => m.event === "snapshot"), onRealServers);

  await t.test("a grant removed: the follow it allowed is cut, other grants keep theirs", async (t) => {
    const aliceFollow = await follow(hub, aliceToken);
    const bobFollow = await follow(hub, bobToken);
    t.teardown(() => {
      aliceFollow.abort();
      bobFollow.abort();
    });
    await waitFor(
      "both follows read lines",
      () => /tick-/.test(aliceFollow.text()) && /tick-/.test(bobFollow.text()),
      onRealServers,
    );
    // alice still holds team-logs through her role: the follow survives losing alice-logs alone.
    await b.commit({ "alice.yaml": null });
    const before = bobFollow.text().length;
    await waitFor("bob's follow grows", () => bobFollow.text().length > before, onRealServers);
    t.equal(hub.bastion.open, 2, "both follows are open");
    // Her role goes: nothing grants her logs any more.
    await b.commit({ "users.yaml": users(["viewer"]) });
    t.not(await aliceFollow.done, "end", "alice's follow is cut, not ended as if the log were over");
    const grown = bobFollow.text().length;
    await waitFor("bob's follow still grows", () => bobFollow.text().length > grown, onRealServers);
    const revoked = (await b.audit()).find(
      (r) => r.actor === "alice" && r.verb === "logs" && r.result === "error",
    );
    t.match(
      revoked?.error,
      /access revoked: no AccessPolicy grants alice logs/,
      "the cut is audited with why",
    );
    // Demoted, her stream ends so the page reconnects as what she is now: a viewer.
    await waitFor("alice's event stream ended on demotion", () => events.ended, onRealServers);
    const viewer = await openEvents(hub, `?token=${encodeURIComponent(aliceToken)}`);
    t.equal(viewer.status, 200, "a viewer still reads the dashboard");
    const snapshot = await waitFor(
      "the viewer's snapshot",
      () => viewer.find((m) => m.event === "snapshot"),
      onRealServers,
    );
    t.match(JSON.parse(snapshot.data).principal, { subject: "alice", role: "viewer" });
    await viewer.close();
  });

  await t.test("the user removed: the open event stream ends and a new one is refused", async (t) => {
    const events = await openEvents(hub, `?token=${encodeURIComponent(aliceToken)}`);
    t.teardown(() => events.close());
    await waitFor("alice's snapshot", () => events.find((m) => m.event === "snapshot"), onRealServers);
    await b.commit({ "users.yaml": [passwordUserYaml("bob", ["user"], bob)].join("") });
    await waitFor("alice's event stream ended", () => events.ended, onRealServers);
    const again = await openEvents(hub, `?token=${encodeURIComponent(aliceToken)}`);
    t.equal(again.status, 401, "her token opens nothing");
    await again.close();
    const logs = await fetch(
      `${hub.url}/api/v1/rlinf.io/v1alpha1/pods/${POD}/log?namespace=agent-local&tailLines=1`,
      { headers: { authorization: `Bearer ${aliceToken}` } },
    );
    t.equal(logs.status, 401);
  });
});
