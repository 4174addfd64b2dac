// The agent's loops (reconnect backoff, burst and periodic reports) run on the Clock it is given,
// so a FakeClock decides when they fire: nothing here sleeps for real backoff delays.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { startAgent } from "../../operators/agent/agent.ts";
import { ProcessRuntime } from "../../operators/agent/runtimes/process/index.ts";
import { createHubTunnel } from "../../operators/hub/tunnel-server.ts";
import { FakeClock } from "../../operators/lib/clock.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import {
  type AgentMessage,
  type AgentSession,
  fileCredentialStore,
} from "../../operators/lib/tunnel/index.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { HOUR, tempDir } from "../lib/tunnel/fixture.ts";

t.test("the agent reconnects and reports when its clock says so", async (t) => {
  const sessions: AgentSession[] = [];
  const reports: AgentMessage[] = [];
  const hub = createHubTunnel({
    dataDir: await tempDir(),
    clusterExists: (name) => name === "local",
    onAgentSession: (session) => {
      sessions.push(session);
      session.on("message", (message) => {
        if (message.type === "report") reports.push(message);
      });
      session.send({ type: "snapshot", generation: 1, objects: [] });
    },
  });
  const { port } = await hub.server.listen(0, "127.0.0.1");
  t.teardown(() => hub.server.close());
  const { token, caFingerprint } = await hub.enrollment.createToken({ cluster: "local", ttlMs: HOUR });

  const clock = new FakeClock(Date.now());
  const runtime = await ProcessRuntime.open({
    stateDir: await mkdtemp(join(tmpdir(), "rlark-agent-clock-")),
    nodeName: "test-node",
    internalIP: "127.0.0.1",
    nvidiaSmi: "/nonexistent/nvidia-smi",
    logger: silentLogger,
  });
  const agent = await startAgent({
    hub: `127.0.0.1:${port}`,
    credentials: fileCredentialStore(join(await tempDir(), "credentials.json")),
    token,
    caHash: caFingerprint,
    runtime,
    runtimeKind: "process",
    reportIntervalMs: 60_000,
    logger: silentLogger,
    clock,
  });
  t.teardown(() => agent.stop());
  await waitFor("the first session", () => sessions.length === 1 && agent.tunnel.connected);

  // The report after connecting waits for the burst window on the fake clock.
  t.equal(reports.length, 0, "no report before the clock moves");
  clock.advance(100);
  await waitFor("the burst report", () => reports.length === 1);
  // The periodic report, too.
  clock.advance(60_000);
  await waitFor("the periodic report", () => reports.length >= 2);

  // The hub drops the tunnel: the agent's next attempt is a timer on its clock, 0.5–1 s away
  // (the first step of the jittered backoff).
  sessions[0]?.close();
  await waitFor("the agent to see the tunnel gone", () => !agent.tunnel.connected);
  const reconnect = await waitFor("the reconnect timer", () =>
    clock.pendingDelays().find((delay) => delay >= 500 && delay <= 1000),
  );
  t.equal(sessions.length, 1, "no new session before the backoff has elapsed on the clock");
  clock.advance(reconnect);
  await waitFor("the second session", () => sessions.length === 2 && agent.tunnel.connected);
  t.equal(agent.tunnel.connections, 2);
});
