// Overlay → merge patch: only the overlay's keys, removal of exactly the keys an earlier overlay
// set, and nothing at all when the node already matches.
import t from "tap";
import {
  type NodeFields,
  overlayPatch,
} from "../../../../operators/agent/runtimes/kubernetes/cluster/node-overlays.ts";

const RECORD = "rlark.io/overlay-keys";
const node = (extra: Partial<NodeFields> = {}): NodeFields => ({
  labels: { "kubernetes.io/hostname": "n1", admin: "keep" },
  annotations: { "admin-note": "hands off" },
  unschedulable: false,
  ...extra,
});

t.test("an overlay adds its keys, cordons, and records what it set", async (t) => {
  const patch = overlayPatch(node(), {
    name: "n1",
    labels: { "rlark.io/node-category-robot": "true" },
    annotations: { "rlark.io/city": "beijing" },
    unschedulable: true,
  });
  t.same(patch, {
    metadata: {
      labels: { "rlark.io/node-category-robot": "true" },
      annotations: {
        "rlark.io/city": "beijing",
        [RECORD]: JSON.stringify({
          annotations: ["rlark.io/city"],
          labels: ["rlark.io/node-category-robot"],
          unschedulable: true,
        }),
      },
    },
    spec: { unschedulable: true },
  });
});

t.test("a node that already matches needs no patch", async (t) => {
  const applied = node({
    labels: { admin: "keep", team: "a" },
    annotations: { [RECORD]: JSON.stringify({ annotations: [], labels: ["team"], unschedulable: false }) },
  });
  t.equal(overlayPatch(applied, { name: "n1", labels: { team: "a" } }), undefined);
});

t.test("keys the next overlay drops are removed, and only those", async (t) => {
  const applied = node({
    labels: { admin: "keep", team: "a", zone: "z1" },
    annotations: {
      "admin-note": "hands off",
      "rlark.io/city": "beijing",
      [RECORD]: JSON.stringify({
        annotations: ["rlark.io/city"],
        labels: ["team", "zone"],
        unschedulable: true,
      }),
    },
    unschedulable: true,
  });
  const patch = overlayPatch(applied, { name: "n1", labels: { team: "a" } });
  t.same(patch, {
    metadata: {
      labels: { zone: null },
      annotations: {
        "rlark.io/city": null,
        [RECORD]: JSON.stringify({ annotations: [], labels: ["team"], unschedulable: false }),
      },
    },
    spec: { unschedulable: null },
  });
});

t.test("no overlay any more reverts every recorded key and drops the record", async (t) => {
  const applied = node({
    labels: { admin: "keep", team: "a" },
    annotations: {
      "admin-note": "x",
      [RECORD]: JSON.stringify({ annotations: [], labels: ["team"], unschedulable: false }),
    },
  });
  t.same(overlayPatch(applied, undefined), {
    metadata: { labels: { team: null }, annotations: { [RECORD]: null } },
  });
});

t.test("a cordon an admin made by hand is not undone by an overlay that never set it", async (t) => {
  const cordoned = node({ unschedulable: true });
  t.equal(overlayPatch(cordoned, undefined), undefined);
  t.notOk(overlayPatch(cordoned, { name: "n1", labels: { a: "1" } })?.spec, "the cordon is left alone");
});

t.test("a broken record is treated as none rather than failing the node", async (t) => {
  const broken = node({ labels: { team: "a" }, annotations: { [RECORD]: "{not json" } });
  const patch = overlayPatch(broken, { name: "n1", labels: { team: "a" } });
  t.same(patch, {
    metadata: {
      annotations: { [RECORD]: JSON.stringify({ annotations: [], labels: ["team"], unschedulable: false }) },
    },
  });
});
