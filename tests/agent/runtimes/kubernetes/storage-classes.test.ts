// What a kubernetes agent reports of its cluster's StorageClasses, and what the hub accepts of it:
// the fields a volume claim's choice needs, the default class by its annotation, sorted, and
// bounded on both ends of the tunnel.
import t from "tap";
import { storageClassSummaries } from "../../../../operators/agent/runtimes/kubernetes/watch/storage-classes.ts";
import { parseAgentMessage } from "../../../../operators/lib/tunnel/index.ts";

const report = (storageClasses: unknown) => ({
  type: "report",
  nodes: [],
  pods: [],
  tasks: [],
  capabilities: [],
  storageClasses,
});

t.test("a StorageClass is summarised with its default flag, sorted by name", async (t) => {
  const summaries = storageClassSummaries([
    {
      metadata: { name: "standard", annotations: { "storageclass.kubernetes.io/is-default-class": "true" } },
      provisioner: "rancher.io/local-path",
      reclaimPolicy: "Delete",
      volumeBindingMode: "WaitForFirstConsumer",
    },
    { metadata: { name: "ceph-rbd" }, provisioner: "rbd.csi.ceph.com", allowVolumeExpansion: true },
    {
      metadata: { name: "slow", annotations: { "storageclass.kubernetes.io/is-default-class": "false" } },
      provisioner: "example.com/nfs",
    },
  ]);
  t.same(summaries, [
    { name: "ceph-rbd", provisioner: "rbd.csi.ceph.com", allowVolumeExpansion: true },
    {
      name: "slow",
      provisioner: "example.com/nfs",
    },
    {
      name: "standard",
      provisioner: "rancher.io/local-path",
      default: true,
      reclaimPolicy: "Delete",
      volumeBindingMode: "WaitForFirstConsumer",
    },
  ]);
  const many = Array.from({ length: 300 }, (_, i) => ({
    metadata: { name: `class-${String(i).padStart(3, "0")}` },
    provisioner: "p",
  }));
  const bounded = storageClassSummaries(many);
  t.equal(bounded.length, 256, "no more than a report may carry");
  t.doesNotThrow(() => parseAgentMessage(report(bounded)), "and the hub accepts what is reported");
});

t.test("the hub refuses a report whose StorageClasses are malformed or too many, naming what", async (t) => {
  const parsed = parseAgentMessage(report([{ name: "a", provisioner: "p", default: true }]));
  t.same(parsed.type === "report" && parsed.storageClasses, [{ name: "a", provisioner: "p", default: true }]);
  t.throws(
    () => parseAgentMessage(report([{ name: "a" }])),
    /storageClasses\[0\]: provisioner must be a string/,
  );
  t.throws(
    () => parseAgentMessage(report([{ name: "a", provisioner: "p", default: "yes" }])),
    /storageClasses\[0\]: default must be a boolean/,
  );
  t.throws(() => parseAgentMessage(report({})), /storageClasses must be an array/);
  const tooMany = Array.from({ length: 257 }, (_, i) => ({ name: `c${i}`, provisioner: "p" }));
  t.throws(() => parseAgentMessage(report(tooMany)), /storageClasses must list at most 256/);
});
