// authorize(): the pure decision every access path asks.
import t from "tap";
import { type AccessTarget, authorize, commandAllowed, execArgv } from "../../operators/access/index.ts";
import { parseLoginName } from "../../operators/access/login-name.ts";
import type { AccessPolicy } from "../../operators/api/index.ts";

function policy(name: string, spec: AccessPolicy["spec"]): AccessPolicy {
  return { apiVersion: "rlinf.io/v1alpha1", kind: "AccessPolicy", metadata: { name }, spec };
}

const trainer: AccessTarget = {
  cluster: "beijing",
  namespace: "train",
  pod: "ppo-actor-0",
  job: "ppo",
  jobLabels: { team: "rl", env: "cartpole" },
  domain: "lab",
};
const alice = { user: "alice", roles: ["user"] };

t.test("nothing is allowed that no policy grants, not even to admins", async (t) => {
  t.equal(authorize([], { user: "root", roles: ["admin"] }, "shell", trainer).allowed, false);
  const viewers = policy("viewers-logs", { subjects: { roles: ["viewer"] }, verbs: ["logs"] });
  t.equal(authorize([viewers], alice, "logs", trainer).allowed, false, "alice is not a viewer");
  t.equal(
    authorize([viewers], { user: "v", roles: ["viewer"] }, "shell", trainer).allowed,
    false,
    "viewers read",
  );
  t.same(authorize([viewers], { user: "v", roles: ["viewer"] }, "logs", trainer), {
    allowed: true,
    reason: "granted by AccessPolicy viewers-logs",
  });
});

t.test("every target field given must match: clusters, namespaces, domains, Job labels", async (t) => {
  const cases: Array<[AccessPolicy["spec"]["targets"], boolean]> = [
    [{ clusters: ["beijing"] }, true],
    [{ clusters: ["shanghai"] }, false],
    [{ namespaces: ["train"] }, true],
    [{ namespaces: ["eval"] }, false],
    [{ domains: ["lab"] }, true],
    [{ domains: ["other"] }, false],
    [{ jobSelector: { matchLabels: { team: "rl" } } }, true],
    [
      { jobSelector: { matchExpressions: [{ key: "env", operator: "In", values: ["cartpole", "go"] }] } },
      true,
    ],
    [{ jobSelector: { matchLabels: { team: "vision" } } }, false],
    [{ clusters: ["beijing"], jobSelector: { matchLabels: { team: "vision" } } }, false],
  ];
  for (const [targets, allowed] of cases) {
    const grant = policy("p", {
      subjects: { users: ["alice"] },
      verbs: ["shell"],
      ...(targets ? { targets } : {}),
    });
    t.equal(authorize([grant], alice, "shell", trainer).allowed, allowed, JSON.stringify(targets));
  }
  const selector = policy("p", {
    subjects: { users: ["alice"] },
    verbs: ["shell"],
    targets: { jobSelector: {} },
  });
  const { job: _job, jobLabels: _labels, ...orphan } = trainer;
  t.equal(
    authorize([selector], alice, "shell", orphan).allowed,
    false,
    "a Job selector never matches a pod of no Job",
  );
});

t.test("exec needs the command on the allowlist and no shell syntax", async (t) => {
  const grant = policy("inspect", {
    subjects: { roles: ["user"] },
    verbs: ["exec"],
    commands: ["nvidia-smi", "ls *"],
  });
  t.equal(authorize([grant], alice, "exec", trainer, "nvidia-smi").allowed, true);
  t.equal(authorize([grant], alice, "exec", trainer, "ls -la /data").allowed, true);
  t.equal(authorize([grant], alice, "exec", trainer, "lsof").allowed, false, "a prefix needs its space");
  t.equal(authorize([grant], alice, "exec", trainer, "ls; rm -rf /").allowed, false);
  t.equal(authorize([grant], alice, "exec", trainer, "ls $(rm x)").allowed, false);
  t.equal(authorize([grant], alice, "exec", trainer).allowed, false, "exec without a command");
  t.match(authorize([grant], alice, "exec", trainer, "rm x").reason, /not in the exec allowlist/);
  t.same(execArgv("  ls   -la  "), ["ls", "-la"]);
  t.equal(commandAllowed(["ls *"], "ls  -la"), true, "spacing does not matter");
});

t.test("login names carry the target", async (t) => {
  t.same(parseLoginName("alice"), { user: "alice" });
  t.same(parseLoginName("alice+ppo-actor-0"), {
    user: "alice",
    target: { kind: "pod", name: "ppo-actor-0" },
  });
  t.same(parseLoginName("alice+train/ppo-actor-0+main"), {
    user: "alice",
    target: { kind: "pod", namespace: "train", name: "ppo-actor-0" },
    container: "main",
  });
  t.same(parseLoginName("alice+task/ppo-actor"), {
    user: "alice",
    target: { kind: "task", task: "ppo-actor" },
  });
  t.throws(() => parseLoginName("alice+a+b+c"));
  t.throws(() => parseLoginName("alice+../etc"));
  t.throws(() => parseLoginName("Alice"));
});

t.test(
  "another team's pod is hidden unless the user is in it, an admin, or a policy lists the team",
  async (t) => {
    const everyone = policy("everyone", {
      subjects: { roles: ["user", "viewer", "admin"] },
      verbs: ["shell", "logs"],
    });
    const vision: AccessTarget = { ...trainer, team: "vision" };
    const refused = authorize([everyone], { ...alice, teams: ["robots"] }, "shell", vision);
    t.same(refused, {
      allowed: false,
      hidden: true,
      reason: "alice is not in team vision, and no AccessPolicy lists that team",
    });
    t.equal(
      authorize([everyone], { ...alice, teams: ["vision"] }, "shell", vision).allowed,
      true,
      "a member",
    );
    t.equal(
      authorize([everyone], { user: "root", roles: ["admin"] }, "shell", vision).allowed,
      true,
      "an admin",
    );
    t.equal(
      authorize([everyone], { user: "v", roles: ["viewer"], teams: [] }, "shell", vision).hidden,
      true,
      "hidden before the role is asked: a viewer's refusal would tell the pod exists",
    );
    const opens = policy("alice-vision-logs", {
      subjects: { users: ["alice"] },
      targets: { teams: ["vision"] },
      verbs: ["logs"],
    });
    t.equal(
      authorize([everyone, opens], alice, "logs", vision).allowed,
      true,
      "a policy listing the team opens it",
    );
    t.equal(authorize([opens], alice, "shell", vision).allowed, false, "for its verbs only, as any grant");
    t.equal(
      authorize([opens], alice, "logs", trainer).allowed,
      false,
      "targets.teams matches only that team's pods",
    );
    t.equal(authorize([everyone], alice, "shell", trainer).allowed, true, "a pod of no team is as before");
  },
);
