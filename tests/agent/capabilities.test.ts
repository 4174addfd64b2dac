// The agent's own capability states from what it finds on this machine: a real process runtime,
// real programs on PATH or missing from it.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { agentCapabilities } from "../../operators/agent/capabilities.ts";
import { ProcessRuntime } from "../../operators/agent/runtimes/process/index.ts";

async function processRuntime(t: Test) {
  const dir = await mkdtemp(join(tmpdir(), "rlark-caps-"));
  const runtime = await ProcessRuntime.open({ stateDir: join(dir, "runtime") });
  t.teardown(() => runtime.stop());
  return runtime;
}

t.test(
  "a process agent with its programs present: every capability READY but the probe it does not run",
  async (t) => {
    const runtime = await processRuntime(t);
    const caps = agentCapabilities({ runtime, runtimeKind: "process", applied: true });
    t.same(caps, [
      { name: "runtime/process", process: "RUNNING", health: "READY" },
      { name: "shell", process: "RUNNING", health: "READY" },
      { name: "files", process: "RUNNING", health: "READY" },
      { name: "logs", process: "RUNNING", health: "READY" },
      {
        name: "network-probe",
        process: "STOPPED",
        health: "STOPPED",
        message: "no network probe runs (rlark agent --group-listen)",
      },
    ]);
  },
);

t.test("a missing pty interpreter or sftp-server degrades shell or files, saying which", async (t) => {
  const runtime = await processRuntime(t);
  const caps = agentCapabilities({
    runtime,
    runtimeKind: "process",
    applied: true,
    access: { python: "python-nowhere", sftpServer: "/nonexistent/sftp-server" },
  });
  t.match(
    caps.find((c) => c.name === "shell"),
    { health: "DEGRADED", message: "python-nowhere is not on PATH" },
  );
  t.match(
    caps.find((c) => c.name === "files"),
    {
      health: "DEGRADED",
      message: "/nonexistent/sftp-server is not an executable file",
    },
  );
  t.match(
    caps.find((c) => c.name === "logs"),
    { health: "READY" },
  );
});

t.test(
  "the runtime is STARTING before its first desired set and DEGRADED when applying failed",
  async (t) => {
    const runtime = await processRuntime(t);
    const name = "runtime/process";
    t.match(
      agentCapabilities({ runtime, runtimeKind: "process", applied: false }).find((c) => c.name === name),
      {
        process: "STARTING",
        health: "STARTING",
      },
    );
    t.match(
      agentCapabilities({ runtime, runtimeKind: "process", applied: false, applyError: "disk full" }).find(
        (c) => c.name === name,
      ),
      { process: "RUNNING", health: "DEGRADED", message: "disk full" },
    );
  },
);
