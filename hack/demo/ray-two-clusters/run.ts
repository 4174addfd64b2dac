// A real two-node Ray cluster across two process-runtime "clusters" on this machine (as root; not
// in CI: too heavy for 2 cores): the Ray head is a pod of one cluster, the worker a pod of the
// other, both of one Domain, each talking to the other only by virtual IP through sidecar ->
// nodeserver -> hub relay -> nodeserver -> sidecar. A driver in the head's pod then runs a task
// that only the worker can take (resource "worker") and prints where it ran.
//
//   hack/demo/ray-two-clusters/setup     # pip `ray` into ~/.cache/rlark/tools/ray-venv
//   node_modules/.bin/node hack/demo/ray-two-clusters/run.ts
//
// The worker finds the head's virtual IP in a file the head writes (both "clusters" share this
// machine's /tmp): a real deployment would give the head a name or a known address instead.
import { mkdirSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import type { Test } from "tap";
import { DomainClusters, podTaskYaml } from "../../../tests/helpers/domain-clusters.ts";
import { domainYaml, jobYaml } from "../../../tests/helpers/job-yaml.ts";

const venv = path.join(process.env.RLARK_CACHE ?? path.join(homedir(), ".cache/rlark"), "tools/ray-venv/bin");
const cidr = "100.120.0.0/24";
const shared = `/tmp/rlark-ray-demo-${process.pid}`;
// Waits until the agent has put the pod's virtual IP on its loopback.
const ownIP = `while ! ip -4 -o addr show dev lo | grep -q ' 100\\.120\\.'; do sleep 0.5; done; VIP=$(ip -4 -o addr show dev lo | sed -n 's/.* \\(100\\.120\\.[0-9.]*\\)\\/32.*/\\1/p')`;
const ray = `${venv}/ray start --block --num-cpus=1 --disable-usage-stats`;
const head = `${ownIP}; echo $VIP > ${shared}/head-ip; ${ray} --head --node-ip-address=$VIP --port=6379 --include-dashboard=false --temp-dir=${shared}/head`;
const worker = `${ownIP}; while [ ! -s ${shared}/head-ip ]; do sleep 0.5; done; ${ray} --address=$(cat ${shared}/head-ip):6379 --node-ip-address=$VIP --resources='{"worker": 1}' --temp-dir=${shared}/worker`;
const DRIVER = `import ray, socket
ray.init(address="auto")
@ray.remote(resources={"worker": 1})
def where():
    return ray.util.get_node_ip_address()
print("nodes:", sorted(n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]))
print("the task ran on", ray.get(where.remote(), timeout=120))`;

const teardowns: (() => unknown)[] = [];
const t = { teardown: (fn: () => unknown) => teardowns.push(fn) } as unknown as Test;
const cleanUp = async () => {
  for (const fn of teardowns.splice(0).reverse()) await fn();
  rmSync(shared, { recursive: true, force: true });
};
// Ctrl-C still removes the agents, pods and namespaces (the shells stay, hence no `exec ray`:
// the pods are found by their command line)
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.once(signal, () => void cleanUp().finally(() => process.exit(130)));
const marker = (pod: string) => `rlark-ray-demo-${process.pid}-${pod}`;
mkdirSync(shared, { recursive: true });
try {
  const bed = await DomainClusters.start(t, ["c1", "c2"], {
    "domain.yaml": domainYaml("ray", cidr),
    "ray.yaml": jobYaml(
      "ray",
      [
        podTaskYaml("head", "c1", head, marker("head")),
        podTaskYaml("worker", "c2", worker, marker("worker")),
      ],
      { domain: "ray" },
    ),
  });
  const headIP = await bed.vip("c1", marker("head"));
  const workerIP = await bed.vip("c2", marker("worker"));
  console.log(`head ${headIP} (cluster c1), worker ${workerIP} (cluster c2)`);
  let out = "";
  for (let attempt = 0; attempt < 60 && !out.includes("the task ran on"); attempt++) {
    out = await bed
      .run(marker("head"), `${venv}/python`, ["-c", DRIVER])
      .catch((error: { stderr?: string; message: string }) => {
        console.log(`driver: not yet (${(error.stderr ?? error.message).trim().split("\n").pop()})`);
        return "";
      });
    if (!out.includes("the task ran on")) await new Promise((r) => setTimeout(r, 5_000));
  }
  console.log(out.trim());
  const relayed = bed.hub.domainRelay?.stats().relayedBytes ?? 0;
  console.log(`the hub relayed ${relayed} bytes between the clusters`);
  console.log(out.includes(`the task ran on ${workerIP}`) ? "WORKED: the task ran on the worker" : "FAILED");
} finally {
  await cleanUp();
}
