// A real two-node Ray cluster across two "clusters" (as root; not in CI: too heavy for 2 cores).
// A hub on a temporary git repository and two process-runtime agents (c1, c2) on this machine; a
// Job in a Domain whose `head` task (on c1) runs `ray start --head` and whose `worker` task (on c2)
// joins it, each advertising its Domain virtual IP. Every Ray connection between them (GCS 6379
// and the dynamic raylet, object manager and worker ports) goes sidecar -> nodeserver -> hub relay
// -> nodeserver -> sidecar. A driver in the head pod runs a task that only the worker can take (a
// custom resource) and prints where it ran. Prints PASS or FAIL; removes everything it started.
//
//   node_modules/.bin/node hack/demo/ray-two-clusters/run.ts
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Test } from "tap";
import { DomainClusters, podTaskYaml } from "../../../tests/helpers/domain-clusters.ts";
import { domainYaml, jobYaml } from "../../../tests/helpers/job-yaml.ts";
import { waitFor } from "../../../tests/helpers/wait-for.ts";
import { rayVenv } from "../ray-venv.ts";

/** Checks of slow things on a loaded machine: up to 10 minutes, a second apart. */
const slowly = { attempts: 600, everyMs: 1000 };

/** tap's Test as far as the helpers use it: teardowns, run here in the order they were added. */
class Teardowns {
  readonly #steps: (() => unknown)[] = [];
  teardown(step: () => unknown): void {
    this.#steps.push(step);
  }
  async run(): Promise<void> {
    for (const step of this.#steps.splice(0))
      try {
        await step();
      } catch (error) {
        console.error(`cleanup: ${(error as Error).message}`);
      }
  }
}

/** Shell lines that wait for the pod's virtual IP on its loopback and put it in $VIP. */
const ownVip = [
  `while :; do VIP=$(ip -4 -o addr show dev lo | awk '$4 !~ /^127\\./ { sub("/.*", "", $4); print $4; exit }'); [ -n "$VIP" ] && break; sleep 0.5; done`,
  'echo "virtual IP $VIP"',
].join("\n");

async function main(): Promise<boolean> {
  const venv = rayVenv();
  const ray = path.join(venv, "bin", "ray");
  const python = path.join(venv, "bin", "python");
  // Short: Ray's unix sockets live under it (108-byte limit).
  const work = mkdtempSync("/tmp/rlray-");
  const headVipFile = path.join(work, "head-vip");
  const common = [
    "--num-cpus=1",
    "--object-store-memory=100000000",
    "--disable-usage-stats",
    "--block",
    "--log-style=record",
  ].join(" ");
  const env = "export RAY_USAGE_STATS_ENABLED=0 RAY_DISABLE_DOCKER_CPU_WARNING=1";
  const head = [
    env,
    ownVip,
    `${ray} start --head --node-ip-address=$VIP --port=6379 --include-dashboard=false --temp-dir=${work}/head ${common}`,
  ].join("\n");
  const worker = [
    env,
    ownVip,
    `while [ ! -s ${headVipFile} ]; do sleep 0.5; done`,
    `HEAD=$(cat ${headVipFile})`,
    'echo "head at $HEAD"',
    `${ray} start --address=$HEAD:6379 --node-ip-address=$VIP --resources='{"c2_worker": 1}' --temp-dir=${work}/worker ${common}`,
  ].join("\n");
  // The nodes' scripts are files: the pod's shell, whose command line holds the marker the demo
  // finds the pod by, must stay (no exec) and must not hold "node" (the helper skips those).
  writeFileSync(path.join(work, "head.sh"), `${head}\n`);
  writeFileSync(path.join(work, "worker.sh"), `${worker}\n`);
  const id = Math.floor(Math.random() * 60);
  const marker = (pod: string) => `rlark-ray-${process.pid}-${id}-${pod}`;
  const files = {
    "domain.yaml": domainYaml("ray", `100.${64 + id}.0.0/24`),
    "ray.yaml": jobYaml(
      "ray",
      [
        podTaskYaml("head", "c1", `sh ${work}/head.sh; exit $?`, marker("head")),
        podTaskYaml("worker", "c2", `sh ${work}/worker.sh; exit $?`, marker("worker")),
      ],
      {
        domain: "ray",
      },
    ),
  };

  const teardowns = new Teardowns();
  const interrupted = () => {
    console.log("interrupted: cleaning up");
    void teardowns.run().then(() => {
      rmSync(work, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  let bed: DomainClusters | undefined;
  try {
    // Root pods (--pod-uid 0): Ray's venv lies in the rlark cache under root's home, and its
    // temp dirs in a 0700 directory, which the pods' own uid could not reach.
    const rootPods = ["--pod-uid", "0"];
    bed = await DomainClusters.start(teardowns as unknown as Test, ["c1", "c2"], files, {
      agentArgs: { c1: rootPods, c2: rootPods },
    });
    console.log(`hub up, agents c1 and c2 started (logs under ${bed.dir})`);
    const clusters = bed;
    const retry = <T>(what: string, get: () => Promise<T | undefined>) => waitFor<T>(what, get, slowly);
    const headVip = await retry("the head pod's virtual IP", () => clusters.vip("c1", marker("head")));
    const workerVip = await retry("the worker pod's virtual IP", () => clusters.vip("c2", marker("worker")));
    console.log(`head (c1) virtual IP ${headVip}, worker (c2) virtual IP ${workerVip}`);
    writeFileSync(headVipFile, headVip);

    const driver = `
import json, socket, ray
ray.init(address="${headVip}:6379", _node_ip_address="${headVip}", log_to_driver=False)
nodes = [n for n in ray.nodes() if n["Alive"]]
print("alive nodes:", sorted(n["NodeManagerAddress"] for n in nodes), flush=True)
if len(nodes) < 2: raise SystemExit("the worker has not joined yet")
@ray.remote(num_cpus=0, resources={"c2_worker": 1})
def where():
    ctx = ray.get_runtime_context()
    return {"hostname": socket.gethostname(), "ip": ray.util.get_node_ip_address(), "node": ctx.get_node_id()}
print("task ran at:", json.dumps(ray.get(where.remote(), timeout=300)), flush=True)
`;
    const out = await retry(
      "a Ray driver in the head pod that sees two nodes and runs the task",
      async () => {
        try {
          return await clusters.run(marker("head"), python, ["-c", driver]);
        } catch (error) {
          const text = String((error as { stderr?: unknown }).stderr ?? (error as Error).message);
          console.log(`driver not yet: ${text.trim().split("\n").slice(-1)[0]}`);
          await new Promise((r) => setTimeout(r, 5000));
          return undefined;
        }
      },
    );
    process.stdout.write(out);
    const ran = JSON.parse(/task ran at: (.*)/.exec(out)?.[1] ?? "{}") as { ip?: string };
    // Proof that Ray's traffic crossed clusters through the hub, not some other way.
    const relayed = clusters.hub.domainRelay?.stats().relayedBytes ?? 0;
    console.log(`the hub's domain relay carried ${relayed} bytes`);
    for (const agent of clusters.agents.values())
      console.log(`${agent.cluster} nodeserver: ${pairs(agent.runDir)}`);
    const pass = ran.ip === workerVip && relayed > 0;
    console.log(
      pass
        ? `PASS: the task ran on the worker (${workerVip}, cluster c2)`
        : `FAIL: the task ran at ${ran.ip} (worker ${workerVip}), hub relayed ${relayed} bytes`,
    );
    return pass;
  } catch (error) {
    console.log(`FAIL: ${(error as Error).message}`);
    if (bed) diagnose(bed, work);
    return false;
  } finally {
    await teardowns.run();
    rmSync(work, { recursive: true, force: true });
  }
}

/** The nodeserver's peer pairs from its /stats: streams and bytes per pair of virtual IPs. */
function pairs(runDir: string): string {
  try {
    return execFileSync(
      "curl",
      [
        "-sS",
        "--max-time",
        "5",
        "--unix-socket",
        path.join(runDir, "nodeserver.sock"),
        "http://nodeserver/stats",
      ],
      { encoding: "utf8" },
    );
  } catch (error) {
    return `/stats: ${(error as Error).message}`;
  }
}

/** What a failed run leaves to read: each nodeserver's /stats, the agents', pods' and Ray's logs kept. */
function diagnose(bed: DomainClusters, work: string): void {
  const kept = mkdtempSync("/tmp/rlray-logs-");
  for (const agent of bed.agents.values()) {
    console.log(`--- ${agent.cluster} nodeserver /stats\n${pairs(agent.runDir)}`);
    console.log(`--- ${agent.cluster} agent log (last 40 lines)\n${tail(agent.log, 40)}`);
  }
  // logs only: the state dirs also hold sockets
  for (const dir of [bed.dir, work, "/tmp/ray"])
    execFileSync("sh", [
      "-c",
      `cd ${dir} 2>/dev/null && find . -name '*.log*' -o -name '*.out' -o -name '*.err' | xargs -r cp --parents -t ${kept} 2>/dev/null; true`,
    ]);
  console.log(`agent, pod and Ray logs kept in ${kept}`);
}

function tail(file: string, lines: number): string {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

process.exitCode = (await main()) ? 0 : 1;
