import t from "tap";
import { capabilityGate, parseRequired, renderGate } from "../../operators/cli/capability-gate.ts";

const online = (name: string, capabilities?: unknown) => ({
  metadata: { name },
  status: { phase: "Online", ...(capabilities ? { capabilities } : {}) },
});

t.test("an online agent that reports no capabilities is UNKNOWN, and fails the gate", async (t) => {
  const gate = capabilityGate([online("old-agent")], ["shell"]);
  t.same(gate.shortfalls, [
    { cluster: "old-agent", capability: "shell", health: "UNKNOWN", message: "not reported" },
  ]);
  t.notOk(gate.passed);
  t.match(renderGate(gate), "old-agent: shell is UNKNOWN (not reported)");
});

t.test("`runtime` stands for the runtime of any kind; every entry under it must be READY", async (t) => {
  const caps = [
    { name: "runtime/docker", health: "READY" },
    { name: "shell", health: "READY" },
  ];
  t.ok(capabilityGate([online("a", caps)], ["runtime", "shell"]).passed);
  t.notOk(capabilityGate([online("a", caps)], ["runtime/process"]).passed, "a named kind must be that kind");
});

t.test("no online agent fails the gate; offline ones are listed, not judged", async (t) => {
  const gate = capabilityGate([{ metadata: { name: "spare" } }], ["shell"]);
  t.notOk(gate.passed);
  t.same(gate.offline, ["spare"]);
  t.match(renderGate(gate), "FAILED, no agent is online");
});

t.test("names are checked", async (t) => {
  t.same(parseRequired("shell, files,shell"), ["shell", "files"]);
  t.throws(() => parseRequired("shell,$(rm)"), /"\$\(rm\)" is not a capability name/);
});
