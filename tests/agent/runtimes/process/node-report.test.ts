import { availableParallelism, totalmem } from "node:os";
import t from "tap";
import {
  parseNvidiaSmi,
  probeGpus,
  reportNode,
} from "../../../../operators/agent/runtimes/process/node-report.ts";
import { script, tempDir } from "./helpers.ts";

t.test("the machine is reported with its CPUs, memory and configured labels", async (t) => {
  const dir = tempDir(t);
  const node = await reportNode({
    name: "edge-01",
    labels: { "rlark.io/node-category-robot": "true" },
    annotations: { "rlark.io/city": "beijing" },
    agentVersion: "1.2.3",
    nvidiaSmi: `${dir}/no-such-nvidia-smi`,
    stateDir: dir,
  });
  t.equal(node.name, "edge-01");
  t.equal(node.capacity.cpu, String(availableParallelism()));
  t.equal(node.capacity.memory, `${Math.floor(totalmem() / 1024)}Ki`);
  t.match(node.capacity["ephemeral-storage"], /^\d+Ki$/);
  t.ok(
    node.disk && node.disk.totalBytes > 0 && node.disk.usedBytes <= node.disk.totalBytes,
    "disk use of the state filesystem",
  );
  t.notOk("nvidia.com/gpu" in node.capacity, "no GPU without nvidia-smi");
  t.same(node.allocatable, node.capacity);
  t.equal(node.labels["rlark.io/node-category-robot"], "true");
  t.equal(node.labels["kubernetes.io/hostname"], "edge-01");
  t.equal(node.annotations["rlark.io/city"], "beijing");
  t.equal(node.nodeInfo.agentVersion, "1.2.3");
  t.match(node.nodeInfo, { operatingSystem: "linux", architecture: /^(amd64|arm64|.+)$/ });
  t.ok(node.addresses.some((a) => a.type === "InternalIP"));
  t.match(node.conditions, [
    { type: "Ready", status: "True" },
    { type: "DiskPressure" },
    { type: "MemoryPressure" },
  ]);
});

t.test("GPUs listed by nvidia-smi become capacity and a model annotation", async (t) => {
  const dir = tempDir(t);
  const fake = script(
    dir,
    "nvidia-smi",
    `#!/bin/sh
[ "$1" = "--query-gpu=name,memory.total" ] || exit 9
echo "NVIDIA A100-SXM4-80GB, 81920 MiB"
echo "NVIDIA A100-SXM4-80GB, 81920 MiB"
`,
  );
  t.same(await probeGpus(fake), [
    { model: "NVIDIA A100-SXM4-80GB", memoryMiB: 81920 },
    { model: "NVIDIA A100-SXM4-80GB", memoryMiB: 81920 },
  ]);
  const node = await reportNode({ agentVersion: "x", nvidiaSmi: fake, stateDir: dir });
  t.equal(node.capacity["nvidia.com/gpu"], "2");
  t.equal(node.annotations["rlark.io/gpu-model"], "NVIDIA A100-SXM4-80GB");
});

t.test("nvidia-smi output parses model names that contain commas", async (t) => {
  t.same(parseNvidiaSmi("Tesla T4, 15360 MiB\n\nA, B, 1024 MiB\n"), [
    { model: "Tesla T4", memoryMiB: 15360 },
    { model: "A, B", memoryMiB: 1024 },
  ]);
});
