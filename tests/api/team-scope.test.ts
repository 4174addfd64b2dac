// teamFilter(): which objects a person sees by team (docs/teams.md#visibility), pure.
import t from "tap";
import { type AccessPolicy, type Job, type Team, teamFilter, viewerOf } from "../../operators/api/index.ts";

const API = "rlinf.io/v1alpha1" as const;
const team = (name: string, members: string[], isDefault = false): Team => ({
  apiVersion: API,
  kind: "Team",
  metadata: { name },
  spec: { members, ...(isDefault ? { default: true } : {}) },
});
const job = (name: string, spec: Partial<Job["spec"]>): Job =>
  ({ apiVersion: API, kind: "Job", metadata: { name }, spec: { tasks: [], ...spec } }) as unknown as Job;
const jobs = [
  job("arm", { team: "robots", domain: "arm-net" }),
  job("cam", { team: "vision", domain: "cam-net" }),
  job("free", {}),
];
const facts = (teams: Team[], policies: AccessPolicy[] = []) => ({
  teams,
  policies,
  job: (name: string) => jobs.find((j) => j.metadata.name === name),
  jobs: () => jobs,
});
const teams = [team("robots", ["alice"]), team("vision", ["bob"])];
const pod = (name: string, jobName: string) => ({ kind: "Pod", metadata: { name }, spec: { job: jobName } });
const domain = (name: string) => ({ kind: "Domain", metadata: { name } });
const peer = (domainName: string) => ({
  kind: "DomainPeer",
  metadata: { name: domainName, labels: { "rlark.io/domain": domainName } },
});

t.test("members see their team's Jobs, pods, Domains and peers, and everything of no team", async (t) => {
  const alice = teamFilter(facts(teams), viewerOf("alice", "user", undefined));
  t.ok(alice(jobs[0] as Job));
  t.notOk(alice(jobs[1] as Job));
  t.ok(alice(jobs[2] as Job), "a Job of no team (no default Team)");
  t.ok(alice(pod("arm-0", "arm")));
  t.notOk(alice(pod("cam-0", "cam")));
  t.ok(alice(pod("gone-0", "gone")), "a pod whose Job is gone is nobody's");
  t.ok(alice(domain("arm-net")));
  t.notOk(alice(domain("cam-net")));
  t.ok(alice(domain("idle-net")), "a Domain no Job uses is nobody's");
  t.notOk(alice(peer("cam-net")));
  t.ok(alice({ kind: "Cluster", metadata: { name: "local" } }), "kinds no team owns");
});

t.test("admins, hubs without Teams, default teams and policies that list a team", async (t) => {
  t.ok(teamFilter(facts(teams), viewerOf("root", "admin", undefined))(jobs[1] as Job), "an admin sees all");
  t.ok(teamFilter(facts([]), viewerOf("alice", "user", undefined))(jobs[1] as Job), "no Teams: no scope");
  const withDefault = [...teams, team("lab", ["carol"], true)];
  t.notOk(
    teamFilter(facts(withDefault), viewerOf("alice", "user", undefined))(jobs[2] as Job),
    "free is lab's",
  );
  t.ok(teamFilter(facts(withDefault), viewerOf("carol", "user", undefined))(jobs[2] as Job));
  const listed: AccessPolicy = {
    apiVersion: API,
    kind: "AccessPolicy",
    metadata: { name: "viewers-see-vision" },
    spec: { subjects: { roles: ["viewer"] }, targets: { teams: ["vision"] }, verbs: ["logs"] },
  };
  const dan = {
    apiVersion: API,
    kind: "User",
    metadata: { name: "dan" },
    spec: { roles: ["viewer"] },
  } as const;
  const danSees = teamFilter(facts(teams, [listed]), viewerOf("dan", "viewer", dan as never));
  t.ok(danSees(jobs[1] as Job), "the policy's role subject opens vision");
  t.notOk(danSees(jobs[0] as Job), "and nothing else");
});
