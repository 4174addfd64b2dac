// A runtime without a Kubernetes API reports each Addon Failed, naming itself.
import t from "tap";
import { addonStatusObjects } from "../../operators/agent/report.ts";

t.test("a docker agent's Addons are Failed with a message naming the docker runtime", async (t) => {
  const addon = {
    metadata: { name: "demo", generation: 2 },
    spec: { version: "1.0.0", namespace: "demo", objects: [] },
  };
  const [status] = addonStatusObjects("edge", [addon], { nodes: [], pods: [] }, false, "docker");
  t.match(status, {
    metadata: { name: "demo", namespace: "agent-edge" },
    status: {
      phase: "Failed",
      observedGeneration: 2,
      message: /^this agent runs the docker runtime, which has no Kubernetes API/,
    },
  });
});
