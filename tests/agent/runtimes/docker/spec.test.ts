// From desired Tasks to desired containers, without an engine: names, revisions and rejections.
import t from "tap";
import { createOptions } from "../../../../operators/agent/runtimes/docker/container.ts";
import { containerName, desiredContainers } from "../../../../operators/agent/runtimes/docker/index.ts";
import type { Task } from "../../../../operators/api/index.ts";
import { dockerTask } from "./helpers.ts";

t.test("a Task as the hub stores it is handed to the runtime as it is", async (t) => {
  // Typed with the generated Task: this stops compiling if the contract drifts from the schema.
  const task: Task = {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Task",
    metadata: { name: "cam", namespace: "agent-edge", uid: "u-1", generation: 2 },
    spec: {
      job: "robot",
      role: "Env",
      agentType: "Docker",
      docker: {
        image: "cam:1",
        devices: ["/dev/video0"],
        mounts: [{ hostPath: "/srv/calib", containerPath: "/calib", readOnly: true }],
        restartPolicy: "Always",
        resources: { cpus: 0.5, memoryMiB: 64 },
        replicas: 2,
      },
    },
  };
  const { containers, rejected } = desiredContainers([task]);
  t.same(rejected, []);
  t.same(
    containers.map((c) => c.key),
    ["agent-edge/cam-0", "agent-edge/cam-1"],
  );
  const [first] = containers;
  if (!first) return;
  t.match(createOptions(first, { owner: "robot", logMaxBytes: 1024 }), {
    name: "rlark_agent-edge_cam-0",
    Image: "cam:1",
    Labels: { "rlinf.io/job": "robot", "rlinf.io/replica": "0", "rlinf.io/owner": "robot" },
    HostConfig: {
      Init: true,
      Binds: ["/srv/calib:/calib:ro"],
      Devices: [{ PathOnHost: "/dev/video0", PathInContainer: "/dev/video0" }],
      RestartPolicy: { Name: "always" },
      LogConfig: { Type: "json-file", Config: { "max-size": "1024", "max-file": "2" } },
      NanoCpus: 500_000_000,
      Memory: 64 * 1024 * 1024,
    },
  });
});

t.test("scaling keeps the revision; a spec change or a new uid changes it", async (t) => {
  const base = dockerTask("svc", { command: ["sleep", "1"] }, { uid: "u" });
  const scaled = dockerTask("svc", { command: ["sleep", "1"], replicas: 3 }, { uid: "u" });
  const changed = dockerTask("svc", { command: ["sleep", "2"] }, { uid: "u" });
  const recreated = dockerTask("svc", { command: ["sleep", "1"] }, { uid: "v" });
  const revision = (task: typeof base) => desiredContainers([task]).containers[0]?.revision;
  t.equal(revision(scaled), revision(base));
  t.not(revision(changed), revision(base));
  t.not(revision(recreated), revision(base));
});

t.test(
  "Tasks that cannot run as given are rejected, saying why; other agent types are skipped",
  async (t) => {
    const noImage = dockerTask("a", { image: "" });
    const device = dockerTask("b", { devices: ["/etc/passwd"] });
    const mount = dockerTask("c", { mounts: [{ hostPath: "relative", containerPath: "/x" }] });
    const raw = { ...dockerTask("d", {}), spec: { agentType: "Raw" as const, raw: { command: ["x"] } } };
    const { containers, rejected } = desiredContainers([noImage, device, mount, raw]);
    t.same(containers, []);
    t.match(rejected, [
      { message: /spec.docker.image/ },
      { message: /spec.docker.devices: \/etc\/passwd must be a path under \/dev/ },
      { message: /spec.docker.mounts/ },
    ]);
    t.equal(containerName("agent-edge", "svc-0"), "rlark_agent-edge_svc-0");
  },
);
