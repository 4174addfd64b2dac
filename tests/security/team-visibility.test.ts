// A team's members see and reach only their team's work (docs/teams.md#visibility). On a real hub
// on git with a real process agent: Team robots (alice) runs Job arm in Domain arm-net, Team
// vision (bob) runs Job cam in Domain cam-net, and one AccessPolicy grants role `user` every verb
// on every pod. The attack: alice, with her own dashboard login token and her own SSH key, asks
// the HTTP API for vision's Job, Tasks, pods, Domain and pod log, opens the event stream, and asks
// the bastion for a shell, a file listing and a forwarded port into cam's pod. Each read is
// answered exactly as for a name that does not exist (404, or "no pod"), so vision's work does not
// leak, and each refusal is in the access audit with the real reason. Her own team's work answers.
// carol, an admin, sees both teams; dave, in no team, is given robots by a policy that lists it.
import type { Test } from "tap";
import t from "tap";
import { hashPassword } from "../../operators/dashboard/auth/index.ts";
import { podJobYaml, policyYaml, run, startBastion } from "../access/bastion-fixture.ts";
import { FAST, openEvents } from "../dashboard/dashboard-hub.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const API = "/api/v1/rlinf.io/v1alpha1";
const PASSWORD = "correct horse battery staple";

function userYaml(name: string, role: string, key: string, hash: string): string {
  return `apiVersion: rlinf.io/v1alpha1
kind: User
metadata:
  name: ${name}
spec:
  roles: [${role}]
  passwordHash: "${hash}"
  sshPublicKeys:
    - ${JSON.stringify(key)}
`;
}

function teamYaml(name: string, members: string[]): string {
  return `apiVersion: rlinf.io/v1alpha1
kind: Team
metadata:
  name: ${name}
spec:
  members: [${members.join(", ")}]
`;
}

/** podJobYaml's Job, in `team` and Domain `<name>-net`, labelled app: <name> and `extra`. */
function teamJobYaml(name: string, team: string, extra = ""): string {
  return podJobYaml(name, `    app: ${name}\n${extra}`).replace(
    "spec:\n",
    `spec:\n  team: ${team}\n  domain: ${name}-net\n`,
  );
}

function domainYaml(name: string, cidr: string): string {
  return `apiVersion: rlinf.io/v1alpha1\nkind: Domain\nmetadata:\n  name: ${name}\nspec:\n  cidr: ${cidr}\n`;
}

t.test("a team's members see and reach only their team's work; admins see all", async (t) => {
  const hash = await hashPassword(PASSWORD, FAST);
  const b = await startBastion(t, {
    users: ["alice", "bob", "carol", "dave"],
    pods: ["arm-main-0", "cam-main-0"],
    hub: { dashboard: { sourcePollMs: 100 } },
    files: (keys) => ({
      "users.yaml": [
        userYaml("alice", "user", keys.alice as string, hash),
        userYaml("bob", "user", keys.bob as string, hash),
        userYaml("carol", "admin", keys.carol as string, hash),
        userYaml("dave", "user", keys.dave as string, hash),
      ].join("---\n"),
      "teams.yaml": [teamYaml("robots", ["alice"]), teamYaml("vision", ["bob"])].join("---\n"),
      "domains.yaml": [domainYaml("arm-net", "10.61.1.0/24"), domainYaml("cam-net", "10.61.2.0/24")].join(
        "---\n",
      ),
      "jobs.yaml": [teamJobYaml("arm", "robots"), teamJobYaml("cam", "vision")].join("---\n"),
      "policies.yaml": [
        policyYaml(
          "users-everything",
          "  subjects:\n    roles: [user, admin]\n  verbs: [shell, files, logs, forward, proxy]\n",
        ),
        policyYaml(
          "dave-robots",
          "  subjects:\n    users: [dave]\n  targets:\n    teams: [robots]\n  verbs: [logs]\n",
        ),
      ].join("---\n"),
    }),
  });
  const { hub } = b.running;
  const tokenOf = async (user: string) => {
    const response = await fetch(`${hub.url}/api/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: user, password: PASSWORD }),
    });
    t.equal(response.status, 200, `${user} logs in`);
    return ((await response.json()) as { token: string }).token;
  };
  const tokens = {
    alice: await tokenOf("alice"),
    carol: await tokenOf("carol"),
    dave: await tokenOf("dave"),
  };
  const get = async (token: string, path: string) => {
    const response = await fetch(`${hub.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
    return { status: response.status, body: await response.text() };
  };
  const names = async (token: string, plural: string) => {
    const { status, body } = await get(token, `${API}/${plural}`);
    t.equal(status, 200);
    return (JSON.parse(body) as { items: { metadata: { name: string } }[] }).items
      .map((i) => i.metadata.name)
      .sort();
  };
  // Every Task and DomainPeer made, so the lists below are whole.
  await waitFor(
    "both Jobs' Tasks and Domain peers made",
    async () =>
      (await hub.store.list("Task")).items.length === 2 &&
      (await hub.store.list("DomainPeer")).items.length === 2,
    onRealServers,
  );

  await t.test("the API's lists hold only the team's objects", async (t) => {
    t.same(await names(tokens.alice, "jobs"), ["arm"]);
    t.same(await names(tokens.alice, "tasks"), ["arm-main"]);
    t.same(await names(tokens.alice, "pods"), ["arm-main-0"]);
    t.same(await names(tokens.alice, "domains"), ["arm-net"]);
    t.notMatch((await get(tokens.alice, `${API}/domainpeers`)).body, /cam/, "no peer of cam-net");
    t.same(await names(tokens.alice, "teams"), ["robots", "vision"], "Teams themselves are no secret");
    t.same(await names(tokens.carol, "jobs"), ["arm", "cam"], "an admin sees every team's");
    t.same(await names(tokens.carol, "pods"), ["arm-main-0", "cam-main-0"]);
    t.same(await names(tokens.dave, "jobs"), ["arm"], "a policy listing robots opens it to dave");
    t.same(await names(tokens.dave, "domains"), ["arm-net"]);
  });

  await t.test("another team's object answers as one that does not exist", async (t) => {
    const cases: [string, string][] = [
      [`${API}/jobs/cam`, `${API}/jobs/nope`],
      [`${API}/tasks/cam-main?namespace=agent-local`, `${API}/tasks/nope-main?namespace=agent-local`],
      [`${API}/pods/cam-main-0?namespace=agent-local`, `${API}/pods/nope-main-0?namespace=agent-local`],
      [`${API}/domains/cam-net`, `${API}/domains/nope-net`],
      [
        `${API}/pods/cam-main-0/log?namespace=agent-local`,
        `${API}/pods/nope-main-0/log?namespace=agent-local`,
      ],
    ];
    for (const [theirs, missing] of cases) {
      const hidden = await get(tokens.alice, theirs);
      const absent = await get(tokens.alice, missing);
      t.equal(hidden.status, 404, `${theirs}: 404`);
      t.equal(
        hidden.body.replaceAll("cam", "nope"),
        absent.body,
        `${theirs}: word for word a missing name's answer`,
      );
    }
    t.equal((await get(tokens.alice, `${API}/jobs/arm`)).status, 200, "her own Job answers");
    t.equal((await get(tokens.carol, `${API}/jobs/cam`)).status, 200, "an admin reads any");
    const log = await get(tokens.alice, `${API}/pods/arm-main-0/log?namespace=agent-local`);
    t.equal(log.status, 200, "her own pod's log answers");
    t.equal((await get(tokens.dave, `${API}/pods/arm-main-0/log?namespace=agent-local`)).status, 200);
    t.equal((await get(tokens.dave, `${API}/pods/cam-main-0/log?namespace=agent-local`)).status, 404);
    t.equal(
      (await get(tokens.alice, "/api/v1/clusters/local/browse/pods")).status,
      403,
      "a cluster's whole inventory is for admins while Teams exist",
    );
  });

  await t.test("the event stream carries only the team's objects", async (t) => {
    // Both Jobs named, as a page showing them would: only her team's are sent all the same.
    const events = await openEvents(hub, `?token=${tokens.alice}&jobs=arm,cam`);
    t.teardown(() => events.close());
    const snapshot = await waitFor(
      "the snapshot",
      () => events.find((m) => m.event === "snapshot"),
      onRealServers,
    );
    const objects = (JSON.parse(snapshot.data) as { objects: { kind: string; metadata: { name: string } }[] })
      .objects;
    const shown = (kind: string) =>
      objects
        .filter((o) => o.kind === kind)
        .map((o) => o.metadata.name)
        .sort();
    t.same(shown("Job"), ["arm"]);
    t.same(shown("Pod"), ["arm-main-0"]);
    t.same(shown("Domain"), ["arm-net"]);
    t.notMatch(snapshot.data, /cam-/, "nothing of vision's, by any name");
    // A change to vision's Job after the snapshot is not sent either; one to robots' is.
    await b.commit({
      "jobs.yaml": [
        teamJobYaml("arm", "robots", "    touched: arm\n"),
        teamJobYaml("cam", "vision", "    touched: cam\n"),
      ].join("---\n"),
    });
    await waitFor(
      "arm's change streamed",
      () => events.find((m) => m.event === "change" && m.data.includes('"touched":"arm"')),
      onRealServers,
    );
    t.notOk(
      events.messages.some((m) => m.event === "change" && m.data.includes("cam")),
      "cam's change was not streamed",
    );
  });

  await t.test("the bastion refuses another team's pod as one that does not exist", async (t: Test) => {
    const host = (login: string) => `${login}@127.0.0.1`;
    const theirs = await run(
      "ssh",
      [...b.sshArgs("alice"), "-T", host("alice+cam-main-0")],
      "echo reached\n",
    );
    const missing = await run(
      "ssh",
      [...b.sshArgs("alice"), "-T", host("alice+nope-main-0")],
      "echo reached\n",
    );
    t.not(theirs.code, 0);
    t.notMatch(theirs.stdout, /reached/, "no shell ran in vision's pod");
    t.match(theirs.stderr, /no pod cam-main-0/);
    t.equal(theirs.stderr.replaceAll("cam", "nope"), missing.stderr, "word for word a missing pod's refusal");
    const own = await run("ssh", [...b.sshArgs("alice"), "-T", host("alice+arm-main-0")], "cat marker.txt\n");
    t.equal(own.code, 0, own.stderr);
    t.match(own.stdout, /here/, "her own team's pod opens");

    const sftpArgs = b.sshArgs("alice").map((a) => (a === "-p" ? "-P" : a));
    const sftp = await run("sftp", [...sftpArgs, "-b", "-", host("alice+cam-main-0")], "ls\n");
    t.not(sftp.code, 0, "no SFTP into vision's pod");
    t.notMatch(sftp.stdout, /marker\.txt/);
    const forward = await run("ssh", [
      ...b.sshArgs("alice"),
      "-W",
      "cam-main-0:8080",
      host("alice+cam-main-0"),
    ]);
    t.not(forward.code, 0, "no forwarded port into it");

    const carol = await run(
      "ssh",
      [...b.sshArgs("carol"), "-T", host("carol+cam-main-0")],
      "cat marker.txt\n",
    );
    t.equal(carol.code, 0, carol.stderr);
    t.match(carol.stdout, /here/, "an admin under the same policy reaches it");
  });

  await t.test("every refusal is audited with its reason", async (t) => {
    const reason =
      /alice is not in (team vision|the team of \w+ [\w-]+), and no AccessPolicy lists that team/;
    const records = await waitFor(
      "alice's refusals audited",
      async () => {
        const mine = (await b.audit()).filter((r) => r.actor === "alice" && r.result === "denied");
        const verbs = new Set(mine.filter((r) => reason.test(r.error ?? "")).map((r) => r.verb as string));
        const missing = ["read", "logs", "shell", "files", "forward"].filter((v) => !verbs.has(v));
        if (missing.length > 0)
          throw new Error(
            `not yet: ${missing} (audited: ${mine.map((r) => `${r.verb} ${r.error}`).join("; ")})`,
          );
        return mine;
      },
      onRealServers,
    );
    const reads = records.filter((r) => (r.verb as string) === "read").map((r) => r.target);
    for (const target of [
      "Job/cam",
      "Task/agent-local/cam-main",
      "Pod/agent-local/cam-main-0",
      "Domain/cam-net",
    ])
      t.ok(reads.includes(target), `the read of ${target} audited`);
    t.notOk(
      records.some((r) => (r.verb as string) === "read" && r.target.includes("nope")),
      "a name that does not exist is nobody's team: not a cross-team read",
    );
  });
});
