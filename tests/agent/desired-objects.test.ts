// The agent checks every object the hub hands it against its kind's schema where it crosses the
// tunnel: a real hub tunnel sends snapshots and deltas to a real agent (process runtime). A bad
// object is refused with an error naming the object and the field; what the agent held for it
// before stays, so a bad update disturbs nothing already running. The runtime's capability state
// follows what the agent has done with them.

import { join } from "node:path";
import t, { type Test } from "tap";
import { startAgent } from "../../operators/agent/agent.ts";
import { ProcessRuntime } from "../../operators/agent/runtimes/process/index.ts";
import { createHubTunnel } from "../../operators/hub/tunnel-server.ts";
import type { KubeObject } from "../../operators/lib/kube-object.ts";
import type { Logger } from "../../operators/lib/logger.ts";
import { type AgentSession, fileCredentialStore } from "../../operators/lib/tunnel/index.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { HOUR, tempDir } from "../lib/tunnel/fixture.ts";

interface Logged {
  level: string;
  message: string;
  fields?: Record<string, unknown>;
}

function recordingLogger(): Logger & { lines: Logged[] } {
  const lines: Logged[] = [];
  const record = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    lines.push({ level, message, ...(fields ? { fields } : {}) });
  return { lines, info: record("info"), warn: record("warn"), error: record("error") };
}

// Kubernetes Tasks: the process runtime holds them in the desired set but starts nothing.
function task(name: string, spec: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Task",
    metadata: { name, namespace: "agent-local", uid: `uid-${name}`, generation: 1 },
    spec: {
      job: "job1",
      task: name,
      agentType: "Kubernetes",
      role: "Actor",
      kubernetes: {
        workload: { kind: "Job", template: { spec: { containers: [{ name: "main", image: "busybox" }] } } },
      },
      ...spec,
    },
  };
}

async function agentOnHub(t: Test) {
  let session: AgentSession | undefined;
  const hub = createHubTunnel({
    dataDir: await tempDir(),
    clusterExists: (name) => name === "local",
    onAgentSession: (s) => {
      session = s;
    },
  });
  const { port } = await hub.server.listen(0, "127.0.0.1");
  t.teardown(() => hub.server.close());
  const { token, caFingerprint } = await hub.enrollment.createToken({ cluster: "local", ttlMs: HOUR });
  const dir = await tempDir();
  const runtime = await ProcessRuntime.open({ stateDir: join(dir, "runtime") });
  const logger = recordingLogger();
  const agent = await startAgent({
    hub: `127.0.0.1:${port}`,
    credentials: fileCredentialStore(join(dir, "credentials.json")),
    token,
    caHash: caFingerprint,
    runtime,
    runtimeKind: "process",
    logger,
  });
  t.teardown(() => agent.stop());
  const connected = await waitFor("the agent's session", () => session);
  return { agent, session: connected, logger };
}

const names = (objects: readonly KubeObject[]) => objects.map((o) => o.metadata.name).sort();
const refusals = (logger: { lines: Logged[] }) => logger.lines.filter((l) => l.level === "error");

t.test("a Task that fails its schema is refused, naming the object and the field", async (t) => {
  const { agent, session, logger } = await agentOnHub(t);
  session.send({
    type: "snapshot",
    generation: 1,
    objects: [task("good"), task("bad", { role: 7 })],
  });
  await waitFor("the snapshot is taken", () => agent.desired().length > 0);
  t.same(names(agent.desired()), ["good"], "only the valid Task is held");
  const [refused, ...more] = refusals(logger);
  t.equal(more.length, 0, "one refusal");
  t.match(refused?.fields, { kind: "Task", namespace: "agent-local", name: "bad", field: "/spec/role" });
  t.match(refused?.message, /refused/);
});

t.test("a bad update keeps what the agent held; a delete still removes it", async (t) => {
  const { agent, session, logger } = await agentOnHub(t);
  session.send({ type: "snapshot", generation: 1, objects: [task("a"), task("b")] });
  await waitFor("the snapshot is taken", () => agent.desired().length === 2);

  session.send({ type: "delta", generation: 2, upserts: [task("a", { agentType: 42 })], deletes: [] });
  await waitFor("the refusal is logged", () => refusals(logger).length === 1);
  const held = agent.desired().find((o) => o.metadata.name === "a");
  t.equal(
    (held as { spec?: { agentType?: unknown } } | undefined)?.spec?.agentType,
    "Kubernetes",
    "the valid Task stays",
  );
  t.match(refusals(logger)[0]?.fields, { name: "a", field: "/spec/agentType" });

  // A snapshot carrying the bad version keeps the held one too.
  session.send({ type: "snapshot", generation: 3, objects: [task("a", { agentType: 42 }), task("b")] });
  await waitFor("the second refusal is logged", () => refusals(logger).length === 2);
  t.same(names(agent.desired()), ["a", "b"]);

  session.send({
    type: "delta",
    generation: 4,
    upserts: [],
    deletes: [{ kind: "Task", namespace: "agent-local", name: "a" }],
  });
  await waitFor("the delete is taken", () => agent.desired().length === 1);
  t.same(names(agent.desired()), ["b"]);
});

t.test("objects of a kind the agent does not take are refused", async (t) => {
  const { agent, session, logger } = await agentOnHub(t);
  const job: KubeObject = {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Job",
    metadata: { name: "job1", namespace: "agent-local" },
    spec: {},
  };
  session.send({ type: "snapshot", generation: 1, objects: [job, task("good")] });
  await waitFor("the snapshot is taken", () => agent.desired().length > 0);
  t.same(names(agent.desired()), ["good"]);
  t.match(refusals(logger)[0]?.fields, { kind: "Job", name: "job1", field: "/kind" });
});

t.test(
  "the runtime capability is STARTING until a desired set is applied, then RUNNING and READY",
  async (t) => {
    const { session } = await agentOnHub(t);
    t.match(session.hello.capabilities, [
      { name: "runtime/process", process: "STARTING", health: "STARTING" },
    ]);
    const states: unknown[] = [];
    session.on("message", (message) => {
      if (message.type === "report" || message.type === "heartbeat") states.push(message.capabilities);
    });
    session.send({ type: "snapshot", generation: 1, objects: [task("good")] });
    await waitFor("a report after the snapshot", () =>
      states.some((c) => JSON.stringify(c).includes('"RUNNING"')),
    );
    t.match(states.at(-1), [{ name: "runtime/process", process: "RUNNING", health: "READY" }]);
  },
);
